"""Entry ids: readable, sortable by date, unique without coordination (date + slug + random suffix)."""

from __future__ import annotations

import os
import re
import unicodedata
from datetime import datetime

SLUG_MAX = 48
ID_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}-[a-z0-9][a-z0-9-]{0,100}\Z")
SUFFIX_LENGTH = 6
_SUFFIX = re.compile(r"-([0-9a-f]{6})\Z")
SHORT_MIN = 4  # the fewest characters of a suffix taken as a short id, as git takes 4 of a hash
SHORT_PATTERN = re.compile(r"[0-9a-f]{4,6}\Z")


def slugify(text: str, max_length: int = SLUG_MAX) -> str:
    """Lower-case ASCII words joined by hyphens: 'Qwen3-32B on Trn2 (eager)' -> 'qwen3-32b-on-trn2-eager'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_length].rstrip("-") or "entry"


def new_id(title: str, when: datetime) -> str:
    """`2026-11-30-tiny-lm-eager-3f9a2c`: 24 random bits make a clash between two writers the same second rare,
    and the store's exclusive create turns the rare clash into a retry rather than an overwrite. A credential in
    the title is masked before it is lower-cased into the id (and so into file names, links and the site)."""
    from kb.secrets.redact import redact_name

    return f"{when:%Y-%m-%d}-{slugify(redact_name(title))}-{_suffix()}"


def reroll(entry_id: str) -> str:
    """The same id with a new random suffix, for the rare clash."""
    return f"{entry_id.rsplit('-', 1)[0]}-{_suffix()}"


def _suffix() -> str:
    return os.urandom(3).hex()  # what secrets.token_hex does, without importing hmac and OpenSSL (0.01 s)


def suffix(entry_id: str) -> str | None:
    """The random suffix of an id (`b5c3dc`), or None for an id written by hand without one."""
    match = _SUFFIX.search(entry_id)
    return match[1] if match else None


def short_id(entry_id: str, clashing: frozenset[str] | set[str] = frozenset()) -> str:
    """What a person types: the suffix, unless another entry has the same one (then the whole id)."""
    tail = suffix(entry_id)
    return tail if tail and tail not in clashing else entry_id


def is_valid_id(text: str) -> bool:
    return bool(ID_PATTERN.match(text))
