"""The questions the site's pages ask the index, each a named function (kb/website holds no SQL)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from kb.index import stored_json
from kb.index.query import KINDS_COMPARED as _KINDS

# Versions recorded with a run (not taken from the environment at record time): what a version facet counts.
_RUN_VERSIONS = "entry NOT IN (SELECT n FROM entries WHERE environment = 'record_time')"
# Entry columns a facet counts by.
FACET_COLUMNS = frozenset({"kind", "status", "backend", "workload", "mode", "failure_class"})


def entry_paths(db: sqlite3.Connection) -> list[tuple[str, str]]:
    """(id, path) of every entry."""
    return db.execute("SELECT id, path FROM entries").fetchall()


def entry_files(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """(id, path, sha256, kind, workload, backend, mode, recorded) of every entry, by path."""
    return db.execute(
        "SELECT e.id, e.path, f.sha256, e.kind, e.workload, e.backend, e.mode, e.recorded "
        "FROM entries e JOIN files f ON f.entry_id = e.id ORDER BY e.path"
    ).fetchall()


def front_matter(db: sqlite3.Connection, entry_id: str) -> tuple[str, str]:
    """(path, front matter as JSON) of one entry."""
    path, stored = db.execute("SELECT path, front_matter FROM entries WHERE id = ?", [entry_id]).fetchone()
    return path, stored_json.unpacked_text(stored)


def entry_count(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def facet_counts(db: sqlite3.Connection, column: str) -> list[tuple[str, int]]:
    """(value, entries) of an entry column, most entries first, then by value."""
    if column not in FACET_COLUMNS:
        raise ValueError(f"not a facet column: {column}")
    return db.execute(
        f"SELECT {column}, COUNT(*) FROM entries WHERE {column} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1"
    ).fetchall()


def tag_counts(db: sqlite3.Connection) -> list[tuple[str, int]]:
    return db.execute("SELECT tag, COUNT(*) FROM tags GROUP BY 1 ORDER BY 2 DESC, 1").fetchall()


def run_version_counts(db: sqlite3.Connection, package: str) -> list[tuple[str, int]]:
    """(version, entries) of a package among the versions recorded with runs (unordered)."""
    return db.execute(
        f"SELECT version, COUNT(*) FROM versions WHERE package = ? AND {_RUN_VERSIONS} GROUP BY 1", [package]
    ).fetchall()


def entry_tags(db: sqlite3.Connection) -> Iterator[tuple[str, str]]:
    """(entry id, tag) of every tag."""
    return iter(db.execute("SELECT e.id, g.tag FROM tags g JOIN entries e ON e.n = g.entry ORDER BY g.rowid"))


def run_versions(db: sqlite3.Connection, packages: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(entry id, package, version) of these packages, as recorded with runs."""
    packages = list(packages)
    marks = ", ".join("?" * len(packages))
    return iter(
        db.execute(
            "SELECT e.id, v.package, v.version FROM versions v JOIN entries e ON e.n = v.entry "
            f"WHERE v.package IN ({marks}) AND {_RUN_VERSIONS} ORDER BY v.rowid",
            packages,
        )
    )


def failure_texts(db: sqlite3.Connection) -> Iterator[tuple[str, str | None, str | None]]:
    """(entry id, message, explanation) of every failure."""
    return iter(
        db.execute(
            "SELECT e.id, f.message, f.explanation FROM failures f JOIN entries e ON e.n = f.entry ORDER BY f.rowid"
        )
    )


def compared_workloads(db: sqlite3.Connection) -> list[str]:
    """The workloads with runs or reports, by name."""
    rows = db.execute(
        f"SELECT workload FROM entries WHERE kind IN ({_KINDS}) AND workload IS NOT NULL "
        "GROUP BY workload ORDER BY workload"
    ).fetchall()
    return [row[0] for row in rows]


def trend_inputs(db: sqlite3.Connection) -> Iterator[tuple[str, str, str]]:
    """(workload, entry id, sha256) of every run and report with a workload, by id."""
    return iter(
        db.execute(
            "SELECT e.workload, e.id, f.sha256 FROM entries e JOIN files f ON f.entry_id = e.id "
            f"WHERE e.kind IN ({_KINDS}) AND e.workload IS NOT NULL ORDER BY e.id"
        )
    )


def trended_names(db: sqlite3.Connection, workload: str) -> list[str]:
    """The metrics with values and the phase timings (compile, step, first step) of a workload's runs."""
    return [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT m.name FROM entries e JOIN metrics m ON m.entry = e.n "
            f"WHERE e.workload = ? AND m.value IS NOT NULL AND e.kind IN ({_KINDS}) "
            "UNION SELECT DISTINCT t.name FROM entries e JOIN timings t "
            "ON t.entry = e.n WHERE e.workload = ? AND t.name IN ('compile_s', 'step_s', 'first_step_s') "
            f"AND e.kind IN ({_KINDS}) ORDER BY 1",
            [workload, workload],
        )
    ]


def decisions(db: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(id, title, recorded, front matter as JSON) of every decision, newest first."""
    rows = db.execute(
        "SELECT id, title, recorded, front_matter FROM entries WHERE kind = 'decision' ORDER BY recorded DESC, id"
    )
    return [
        (entry_id, title, recorded, stored_json.unpacked_text(stored)) for entry_id, title, recorded, stored in rows
    ]


def decision_paths(db: sqlite3.Connection) -> list[str]:
    """The paths of every decision, oldest first."""
    return [row[0] for row in db.execute("SELECT path FROM entries WHERE kind = 'decision' ORDER BY recorded, id")]


def workload_entries(db: sqlite3.Connection) -> Iterator[tuple[str, str | None, str | None, str, str]]:
    """(workload, backend, mode, id, recorded) of every run and report with a workload, oldest first."""
    return iter(
        db.execute(
            f"SELECT workload, backend, mode, id, recorded FROM entries WHERE kind IN ({_KINDS}) "
            "AND workload IS NOT NULL ORDER BY recorded, id"
        )
    )


def workload_packages(db: sqlite3.Connection, workload: str) -> list[tuple[str | None, str]]:
    """(backend, package) of every package version the workload's runs and reports record."""
    return db.execute(
        "SELECT DISTINCT e.backend, v.package FROM entries e JOIN versions v INDEXED BY versions_entry "
        f"ON v.entry = e.n WHERE e.workload = ? AND e.kind IN ({_KINDS}) ORDER BY 2, 1",
        [workload],
    ).fetchall()
