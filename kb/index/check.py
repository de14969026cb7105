"""Everything wrong with a knowledge base: entries that do not parse or validate, and links to nothing."""

from __future__ import annotations

import sqlite3

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
        try:
            line = Entry.read(path).lines.get(("links", role))
        except (EntryError, OSError):
            line = None
        found.append(Problem(path, line, f"links.{role}", f"no entry '{target}' in this knowledge base"))
    for path, folder in kb.names_not_text():
        left_out = "the folder and all in it" if folder else "the file"
        message = f"the name is not UTF-8 text: kb leaves {left_out} out until it is renamed"
        found.append(Problem(path, None, None, message))
    checked = db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    return sorted(found, key=lambda p: (str(p.path), p.line or 0)), checked
