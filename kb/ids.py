"""Entry ids: readable, sortable by date, unique without coordination (date + slug + random suffix)."""

from __future__ import annotations

import re
import secrets
import unicodedata
from datetime import datetime

SLUG_MAX = 48
ID_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}-[a-z0-9][a-z0-9-]{0,100}\Z")


def slugify(text: str, max_length: int = SLUG_MAX) -> str:
    """Lower-case ASCII words joined by hyphens: 'Qwen3-32B on Trn2 (eager)' -> 'qwen3-32b-on-trn2-eager'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_length].rstrip("-") or "entry"


def new_id(title: str, when: datetime) -> str:
    """`2026-11-30-tiny-lm-eager-3f9a2c`: 24 random bits make a clash between two writers the same second rare,
    and the store's exclusive create turns the rare clash into a retry rather than an overwrite."""
    return f"{when:%Y-%m-%d}-{slugify(title)}-{_suffix()}"


def reroll(entry_id: str) -> str:
    """The same id with a new random suffix, for the rare clash."""
    return f"{entry_id.rsplit('-', 1)[0]}-{_suffix()}"


def _suffix() -> str:
    return secrets.token_hex(3)


def is_valid_id(text: str) -> bool:
    return bool(ID_PATTERN.match(text))
