"""Credentials already in a knowledge base: `kb check --secrets` and the site build's refusal.

Every entry file and attachment (gzip opened, UTF-16 decoded, binary formats skipped) is read the way masking
reads it; a line that masking would change holds a finding. A finding names its file, its line and the rule that
found it, never the value. What was scanned is remembered in the cache folder by size, times and inode, and by a
digest of the rules, so that a site build scans only the files that changed. This machine's own credentials
(kb.secrets.known) are masked when text is recorded and not looked for here: a cache of what was found in a
file must say nothing about them.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kb.store import atomic
from kb.store.knowledge_base import TEXT_SNIFF, KnowledgeBase, text_codec

CACHE = "secrets-scan.json"
LINES = 2000  # lines masked together: a block masking leaves unchanged has no finding, and most have none


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    rule: str

    @property
    def message(self) -> str:
        return f"{self.rule}: looks like a credential; mask or remove it (the value is not shown)"


def rule_of(line: str) -> str:
    """The name of what finds a credential in this line (the line holds one: masking changes it)."""
    from kb.secrets import gitleaks, redact

    if "PRIVATE KEY" in line or "Private-" in line:
        return "private-key"
    found = gitleaks.find(line)
    if found:
        return f"gitleaks:{found[0][2]}"
    shape = redact.shapes().search(line)
    if shape:
        group = next((name for name, value in shape.groupdict().items() if value), None)
        return f"shape:{group}" if group else "shape"
    if redact.mask_found(line) != line:
        return "high-entropy-token"
    return "secret-name"


def scan_entry(path: Path) -> list[tuple[int, str]]:
    """(line, rule) of each field and body line of an entry that masking would change. Its fields are compared as
    values, not as lines: YAML folds and quotes a long value, and a piece of one is not the value."""
    from kb.errors import EntryError
    from kb.model.entry import Entry
    from kb.secrets.redact import redact_fields

    try:
        text = path.read_text("utf-8", errors="replace")
        entry = Entry.parse(text, path)
    except (EntryError, OSError):
        return scan_file(path)  # not an entry kb can read: as lines
    found = [
        (_line_of(entry.lines, where), rule_of(before))
        for where, before, after in _differences(entry.data, redact_fields(entry.data), ())
        if _changed(before, after)
    ]
    start = text.count("\n", 0, text.rfind(entry.body)) if entry.body and entry.body in text else 0
    found += [(start + line, rule) for line, rule in scan_lines(iter(entry.body.splitlines(True)))]
    return found


def _differences(before: object, after: object, where: tuple) -> Iterator[tuple[tuple, str, str]]:
    """(field path, value, masked value) of each text that masking changed, keys included."""
    if isinstance(before, str) and isinstance(after, str):
        if before != after:
            yield where, before, after
    elif isinstance(before, dict) and isinstance(after, dict):
        for (key, value), (masked_key, masked) in zip(before.items(), after.items(), strict=False):
            if isinstance(key, str) and key != masked_key:
                yield (*where, key), key, str(masked_key)
            yield from _differences(value, masked, (*where, key))
    elif isinstance(before, list) and isinstance(after, list):
        for number, (value, masked) in enumerate(zip(before, after, strict=False)):
            yield from _differences(value, masked, (*where, number))


def _line_of(lines: dict[tuple, int], where: tuple) -> int:
    while where and where not in lines:
        where = where[:-1]
    return lines.get(where, 1)


def scan_lines(lines: Iterator[str]) -> Iterator[tuple[int, str]]:
    """(line number, rule) of each line holding a credential."""
    from kb.secrets.redact import redact_text

    number = 0
    block: list[str] = []
    for line in (*lines, None):
        if line is not None:
            block.append(line)
            if len(block) < LINES:
                continue
        text = "".join(block)
        if text and _changed(text, redact_text(text)):
            for offset, each in enumerate(block):
                if _changed(each, redact_text(each)):
                    yield number + offset + 1, rule_of(each)
        number += len(block)
        block = []


def _changed(text: str, masked: str) -> bool:
    """Whether masking hid something: its letters and digits differ. A quote or blank that a mask took with it
    (`'Cookie: [REDACTED]'` as YAML quotes an entry's text) is no finding."""
    return masked != text and _ALNUM.sub("", masked) != _ALNUM.sub("", text)


_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        codec = text_codec(handle.read(TEXT_SNIFF))
    if codec is None:
        return
    with opener(path, "rt", encoding=codec, errors="replace", newline="") as handle:
        yield from handle


def scan_file(path: Path) -> list[tuple[int, str]]:
    try:
        return list(scan_lines(_lines(path)))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return [(0, f"unreadable ({getattr(exc, 'strerror', None) or exc}): not scanned")]


def scan_base(kb: KnowledgeBase) -> list[Finding]:
    """Every finding under the entries folder, in path order."""
    cache_path = kb.cache_path / CACHE
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    if not isinstance(cache, dict) or cache.get("rules") != _rules_digest():
        cache = {}
    fresh: dict[str, list] = {"rules": _rules_digest()}
    found: list[Finding] = []
    for path in _files(kb.entries_path):
        relative = path.relative_to(kb.root).as_posix()
        try:
            info = os.stat(path)
        except OSError:
            continue
        key = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        known = cache.get(relative)
        if isinstance(known, list) and len(known) == 2 and known[0] == key:
            hits = known[1]
        else:
            scan = scan_entry if path.suffix == ".md" else scan_file
            hits = _without_known(scan, path)
        fresh[relative] = [key, [list(hit) for hit in hits]]
        found += [Finding(path, line, rule) for line, rule in hits]
    if fresh != cache and kb.cache_path.is_dir():
        with contextlib.suppress(OSError):  # a cache: the next scan reads the files again
            atomic.write_text(cache_path, json.dumps(fresh), durable=False)
    return found


def _without_known(scan, path: Path) -> list[tuple[int, str]]:
    from kb.secrets.redact import MASK_KNOWN

    token = MASK_KNOWN.set(False)
    try:
        return scan(path)
    finally:
        MASK_KNOWN.reset(token)


@functools.cache
def _rules_digest() -> str:
    """What a cached scan depends on besides the file: the masking code and the vendored rules."""
    from kb.secrets import gitleaks, redact

    digest = hashlib.sha256()
    for path in (Path(redact.__file__), gitleaks.RULES_FILE, Path(gitleaks.__file__), Path(__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _files(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        for name in sorted(files):
            path = Path(root, name)
            if not name.startswith(".") and not path.is_symlink() and path.is_file():
                yield path


def entry_of(kb: KnowledgeBase, path: Path) -> str:
    """The id of the entry a file belongs to: the entry file itself, or the one beside its attachment folder."""
    for candidate in (path, *path.parents):
        if candidate == kb.entries_path:
            break
        if candidate == path and path.suffix == ".md":
            return path.stem
        if candidate.with_name(candidate.name + ".md").is_file():
            return candidate.name
    return path.relative_to(kb.entries_path).as_posix()
