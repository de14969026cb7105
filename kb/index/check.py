"""Everything wrong with a knowledge base: entries that do not parse or validate, links to nothing, and entries
dated in the future (a wrong clock on the machine that recorded them: they would sort first for good)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from kb.errors import EntryError, Problem
from kb.index.sync import stored_problems
from kb.model.entry import Entry, iso, utc_now
from kb.store.knowledge_base import KnowledgeBase

FUTURE_SLACK = timedelta(days=1)  # time zones and clocks a little ahead are not the future


def problems(kb: KnowledgeBase, db: sqlite3.Connection) -> tuple[list[Problem], int]:
    """(problems in file order, number of entry files checked); the index must be in sync."""
    found = stored_problems(kb, db)
    dangling = db.execute(
        "SELECT e.path, l.role, l.target FROM links l JOIN entries e ON e.n = l.entry "
        "WHERE l.target NOT IN (SELECT id FROM entries) ORDER BY e.path, l.role"
    ).fetchall()
    for relative, role, target in dangling:
        path = kb.entries_path / relative
        line = _line(path, ("links", role))
        found.append(Problem(path, line, f"links.{role}", f"no entry '{target}' in this knowledge base"))
    latest = iso(utc_now() + FUTURE_SLACK)
    future = db.execute("SELECT path, recorded FROM entries WHERE recorded > ? ORDER BY path", (latest,)).fetchall()
    for relative, recorded in future:
        path = kb.entries_path / relative
        line = _line(path, ("recorded",))
        message = f"dated in the future ({recorded}): was the recording machine's clock wrong? correct the date"
        found.append(Problem(path, line, "recorded", message))
    listed = db.execute(
        "SELECT e.path, a.value FROM entries e, json_each(e.attachments) a WHERE e.attachments IS NOT NULL "
        "ORDER BY e.path"
    ).fetchall()
    for relative, attachment in listed:
        path = kb.entries_path / relative
        if not (path.parent / attachment).is_file():
            message = f"lists '{attachment}', which is not there: restore the file or remove it from the list"
            found.append(Problem(path, _line(path, ("attachments",)), "attachments", message))
    for path, folder in kb.names_not_text():
        left_out = "the folder and all in it" if folder else "the file"
        message = f"the name is not UTF-8 text: kb leaves {left_out} out until it is renamed"
        found.append(Problem(path, None, None, message))
    checked = db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    return sorted(found, key=lambda p: (str(p.path), p.line or 0)), checked


def _line(path: Path, field: tuple[str, ...]) -> int | None:
    try:
        return Entry.read(path).lines.get(field)
    except (EntryError, OSError):
        return None
