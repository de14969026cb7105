"""Evidence read from another tool's files (JUnit XML, profiler traces, compile traces) becomes an entry.

Each importer reads its files into an `Imported`: a title, the entry's kind, its sections, a Markdown
body and the files to attach (the originals and anything derived, such as a per-case table). This
module turns that into a new entry, or adds it to an existing run entry, with `provenance.source:
imported`. An importer that finds bad input raises KbError before anything is written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ingest.describe import RunInfo
from ingest.finish import list_attachments
from kb.errors import LONE_SURROGATE, KbError
from kb.model.entry import Entry, entry_now
from kb.store.knowledge_base import KnowledgeBase


@dataclass
class Imported:
    title: str  # a title from the files, used unless --title is given
    kind: str  # "coverage" or "run"
    fields: dict[str, Any]  # entry sections: coverage / profile / compile, metrics, timings, status ...
    body: str  # Markdown for people: the summary sentence and tables
    files: list[tuple[Path, str]] = field(default_factory=list)  # (file, name beside the entry) to attach


def create_imported(
    kb: KnowledgeBase, imported: Imported, info: RunInfo, *, tool: str, versions: dict[str, str] | None = None
) -> Entry:
    """A new entry from what an importer read and what the person said (workload, backend, tags...)."""
    imported = _valid_text(imported)
    given = info.fields()
    fields: dict[str, Any] = {**imported.fields, **{k: v for k, v in given.items() if k != "metrics"}}
    if imported.fields.get("metrics") or given.get("metrics"):
        fields["metrics"] = {**(imported.fields.get("metrics") or {}), **(given.get("metrics") or {})}
    if versions:
        fields["versions"] = dict(sorted(versions.items()))
    fields["provenance"] = {"source": "imported", "tool": tool, "environment": "none"}
    entry = entry_now(info.title or imported.title, imported.kind, **fields)
    entry.body = imported.body + (f"\n## Notes\n\n{info.body()}" if info.body() else "")
    entry = kb.create(entry)
    try:
        return _attach(kb, entry, imported)
    except BaseException:
        # An entry without the files it summarises would mislead: take it back, whatever stopped the copy.
        shutil.rmtree(kb.attachments_path(entry), ignore_errors=True)
        (entry.path or kb.entry_path(entry.id)).unlink(missing_ok=True)
        raise


def add_to(kb: KnowledgeBase, ref: str, imported: Imported, section: str) -> Entry:
    """Add an importer's section (and its files) to an existing entry, e.g. a profile to the run it profiled."""
    path = kb.locate(ref)
    if not path.resolve().is_relative_to(kb.entries_path.resolve()):  # locate() takes any path to a .md file
        raise KbError(f"--to {ref}: {path} is not in {kb.entries_path}; kb adds only to its own entries")
    entry = Entry.read(path)
    imported = _valid_text(imported)
    if section in entry.data:
        raise KbError(f"{entry.id} already has a {section} section; import into a new entry instead (drop --to)")
    entry.data[section] = imported.fields[section]
    entry.body = entry.body.rstrip("\n") + "\n\n" + imported.body if entry.body.strip() else imported.body
    return _attach(kb, entry, imported)


def _valid_text(imported: Imported) -> Imported:
    """The import with every lone surrogate in its text replaced by U+FFFD, the mark for an undecodable character."""

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return LONE_SURROGATE.sub("\ufffd", value)
        if isinstance(value, dict):
            return {clean(key): clean(item) for key, item in value.items()}
        return [clean(item) for item in value] if isinstance(value, list) else value

    return replace(imported, title=clean(imported.title), fields=clean(imported.fields), body=clean(imported.body))


def _attach(kb: KnowledgeBase, entry: Entry, imported: Imported) -> Entry:
    for path, name in imported.files:
        placed = kb.attach(entry, path, name).name
        if placed != name:  # the entry already had a file of that name: point the sections at the new one
            _rename([entry.data[key] for key in imported.fields if key in entry.data], name, placed)
    entry.data["attachments"] = list_attachments(kb, entry) or None
    if entry.data["attachments"] is None:
        del entry.data["attachments"]
    kb.save(entry)
    return entry


def _rename(sections: list[Any], old: str, new: str) -> None:
    """Point every field of the imported sections that names the attachment `old` (profile.trace) at `new`."""
    for section in sections:
        if isinstance(section, dict):
            for key, value in section.items():
                if value == old:
                    section[key] = new
