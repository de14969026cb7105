"""The values recorded for an entry column (backends, workloads, modes), for naming the known ones."""

from __future__ import annotations

import sqlite3

from kb.index.db import reading

COLUMNS = ("backend", "workload", "mode", "status", "kind", "failure_class")


def recorded_values(db: sqlite3.Connection, column: str) -> list[str]:
    if column not in COLUMNS:  # a column name is never a parameter: only these are asked for
        raise ValueError(column)
    with reading(db):
        rows = db.execute(f"SELECT DISTINCT {column} FROM entries WHERE {column} IS NOT NULL ORDER BY {column}")
        return [row[0] for row in rows]
