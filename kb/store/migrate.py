"""`kb migrate`: entry files written by an older kb rewritten in the current format, after a backup.

Reading needs none of it: the upgrade chain (kb/model/upgrade.py, part of the entry model) brings every entry up
to date as it is read; this rewrites the files so that they no longer need it, keeping each line that did
not change as it was written.
"""

from __future__ import annotations

import difflib
import io
import math
import tarfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import EntryError, Problem
from kb.model import frontmatter
from kb.model import validation as schema
from kb.model.upgrade import upgrade, written_version
from kb.store import atomic
from kb.terminal.progress import counted

if TYPE_CHECKING:
    from kb.store.knowledge_base import KnowledgeBase

BACKUPS = "backups"


@dataclass
class Change:
    """One entry file to rewrite: its text as read and as it will be written."""

    path: Path
    version: int
    before: str
    after: str

    def diff(self, name: str) -> str:
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass
class Plan:
    """What `kb migrate` would do: the files to rewrite, how many are current, and the files it cannot read."""

    changes: list[Change] = field(default_factory=list)
    current: int = 0
    problems: list[Problem] = field(default_factory=list)


@dataclass
class Written:
    """What `kb migrate --write` did: where the backup went, the files rewritten, the files left alone."""

    backup: Path | None
    written: list[Change]
    problems: list[Problem]


def plan(kb: KnowledgeBase) -> Plan:
    """Every entry file that needs rewriting; a broken or newer file becomes a problem and the scan goes on."""
    found = Plan()
    for path in counted(list(kb.iter_entry_paths()), "Reading"):
        try:
            text = read_text(path)
            change = migrate_text(text, path)
        except EntryError as exc:
            found.problems.extend(exc.problems)
            continue
        except OSError as exc:
            found.problems.append(Problem(path, None, None, f"cannot read: {exc.strerror}"))
            continue
        if change is None:
            found.current += 1
        else:
            found.changes.append(change)
    return found


def read_text(path: Path) -> str:
    """The file's exact text: bytes decoded, no newline translation, so that a rewrite keeps CRLF files CRLF."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EntryError([Problem(path, None, None, f"not UTF-8 text (byte {exc.start}); save it as UTF-8")]) from None


def migrate_text(text: str, path: Path) -> Change | None:
    """The rewrite of one entry file to SCHEMA_VERSION; None when it is current. An entry that is newer,
    broken, or invalid once upgraded raises an EntryError naming file and line."""
    from kb.model.entry import Entry

    doc = frontmatter.load(text, path)
    version = written_version(doc.data)
    if version == schema.SCHEMA_VERSION:
        return None
    upgraded = upgrade(doc.data)
    if upgraded is doc.data:  # newer, or no version kb knows: reading it says why
        Entry.parse(text, path)
        return None
    data = schema.coerce_entry(upgraded)
    schema.validate(data, path, doc.lines)
    head, front, tail = _parts(text)
    newline = "\r\n" if head.endswith("\r\n") else "\n"
    for candidate in (_keep_unchanged(front, doc, upgraded, data, newline), _canonical(data, newline)):
        if candidate is None:
            continue
        after = head + candidate + tail
        again = Entry.parse(after, path)
        if _same(again.data, data) and again.body == doc.body:
            return Change(path, version, text, after)
    raise EntryError([Problem(path, 1, None, "cannot be rewritten to reread as the same entry; report this file")])


def _parts(text: str) -> tuple[str, list[str], str]:
    """(opening fence line, front matter lines with their ends, closing fence onward): the frame is kept as is."""
    pieces = text.split("\n")
    closing = next(i for i in range(1, len(pieces)) if pieces[i].rstrip("\r") in (frontmatter.FENCE, "..."))
    return pieces[0] + "\n", [piece + "\n" for piece in pieces[1:closing]], "\n".join(pieces[closing:])


def _keep_unchanged(
    front: list[str], doc: frontmatter.Document, upgraded: dict[str, Any], data: dict[str, Any], newline: str
) -> str | None:
    """The front matter with every top-level field the steps left alone kept as written (comments, quoting,
    flow style) and the others written out; None unless each top-level field starts a line of its own."""
    keys = list(doc.data)
    starts = [doc.lines[(key,)] - 2 for key in keys]  # file line 1 is the fence; front lines count from 0
    if not keys or starts != sorted(set(starts)) or any(front[i][:1] in (" ", "\t") for i in starts):
        return None
    # A key's block begins at the comment and blank lines right above it, and runs to the next block.
    begins = []
    for index, start in enumerate(starts):
        floor = starts[index - 1] + 1 if index else 0
        while start > floor and (front[start - 1].startswith("#") or not front[start - 1].strip()):
            start -= 1
        begins.append(start)
    ends = [*begins[1:], len(front)]
    blocks = {key: (front[begins[i] : starts[i]], front[starts[i] : ends[i]]) for i, key in enumerate(keys)}
    out = front[: begins[0]]
    for key in _layout(keys, data):
        above, own = blocks.get(key, ([], []))
        kept = key in doc.data and _same(doc.data[key], upgraded[key], strict=True)
        out += above + (own if kept else [frontmatter.dump({key: data[key]}).replace("\n", newline)])
    return "".join(out)


def _layout(original: list[str], data: dict[str, Any]) -> list[str]:
    """The written order: fields kept where they were, each new one after its predecessor in kb's own order."""
    from kb.model.entry import ordered

    canonical = list(ordered(data))
    out = [key for key in original if key in data]
    for index, key in enumerate(canonical):
        if key not in out:
            before = [k for k in canonical[:index] if k in out]
            out.insert(out.index(before[-1]) + 1 if before else 0, key)
    return out


def _canonical(data: dict[str, Any], newline: str) -> str:
    from kb.model.entry import ordered

    return frontmatter.dump(ordered(data)).replace("\n", newline)


def _same(a: Any, b: Any, strict: bool = False) -> bool:
    """Equal values, NaN equal to NaN; `strict` also tells quoted from unquoted text (str from Plain)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], strict) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, strict) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (type(a) is type(b) or (not strict and isinstance(a, str) and isinstance(b, str))) and a == b


def _backup_path(kb: KnowledgeBase) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return kb.cache_path / BACKUPS / f"migrate-{stamp}.tar.gz"


def write(kb: KnowledgeBase, changes: list[Change]) -> Written:
    """Back up the files as read, then replace each atomically; a file edited since it was read is left alone."""
    if not changes:
        return Written(None, [], [])
    backup = _write_backup(kb, changes)
    written, problems = [], []
    for change in counted(changes, "Migrating"):
        try:
            unchanged = read_text(change.path) == change.before
        except (OSError, EntryError):
            unchanged = False
        if not unchanged:
            problems.append(Problem(change.path, None, None, "changed while kb migrate ran; run it again"))
            continue
        atomic.write_text(change.path, change.after)
        written.append(change)
    return Written(backup, written, problems)


def _write_backup(kb: KnowledgeBase, changes: list[Change]) -> Path:
    """A tar.gz of the files exactly as read (paths relative to the knowledge base), written before any of them."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for change in changes:
            data = change.before.encode("utf-8")
            info = tarfile.TarInfo(change.path.relative_to(kb.root).as_posix())
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            archive.addfile(info, io.BytesIO(data))
    kb.ensure_cache()
    path = _backup_path(kb)
    for attempt in range(2, 100):
        try:
            atomic.write_bytes(path, buffer.getvalue(), exclusive=True)
            return path
        except FileExistsError:  # two migrations in one second: the second gets its own name
            path = path.with_name(f"{path.name.removesuffix('.tar.gz')}-{attempt}.tar.gz")
    raise EntryError([Problem(path, None, None, "no free name for the backup; clear out old backups")])
