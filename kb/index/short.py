"""Which short ids (random suffixes) more than one entry shares, so that lists show those ids whole."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from kb.index.db import reading
from kb.model.ids import SUFFIX_LENGTH, suffix

CHUNK = 500  # parameters per statement, well under SQLite's limit


def clashing_suffixes(db: sqlite3.Connection, entry_ids: Iterable[str]) -> set[str]:
    """The suffixes of these ids that another entry in the index has too."""
    wanted = sorted({tail for tail in map(suffix, entry_ids) if tail})
    found: set[str] = set()
    with reading(db):
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            marks = ", ".join("?" * len(chunk))
            sql = (
                f"SELECT substr(id, -{SUFFIX_LENGTH}) AS tail FROM entries WHERE tail IN ({marks}) "
                "GROUP BY tail HAVING count(*) > 1"
            )
            found.update(row[0] for row in db.execute(sql, chunk))
    return found
