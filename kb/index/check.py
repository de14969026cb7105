"""Everything wrong with a knowledge base: entries that do not parse or validate, and links to nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kb.entry import Entry
from kb.errors import EntryError, Problem
from kb.index.sync import stored_problems
from kb.store import KnowledgeBase


def problems(kb: KnowledgeBase, db: sqlite3.Connection) -> tuple[list[Problem], int]:
    """(problems in file order, number of entry files checked); the index must be in sync."""
    found = stored_problems(kb, db)
    dangling = db.execute(
        "SELECT e.path, l.role, l.target FROM links l JOIN entries e ON e.id = l.entry_id "
        "WHERE l.target NOT IN (SELECT id FROM entries) ORDER BY e.path, l.role"
    ).fetchall()
    for relative, role, target in dangling:
        path = kb.entries_path / relative
        line = _line(path, ("links", role))
        found.append(Problem(path, line, f"links.{role}", f"no entry '{target}' in this knowledge base"))
    listed = db.execute(
        "SELECT e.path, json_extract(a.value, '$.path') FROM entries e, json_each(e.front_matter, '$.attachments') a "
        "WHERE json_type(e.front_matter, '$.attachments') = 'array' AND json_type(a.value, '$.path') = 'text' "
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
