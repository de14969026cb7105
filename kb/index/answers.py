"""The index's named queries for the answer layer (kb.answers): the board, comparisons, trends, decisions.

Each function is one question with plain rows as its answer; kb.answers does the judging in Python.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from types import EllipsisType
from typing import Any

from kb.index import stored_json
from kb.index.db import BUSY_TIMEOUT_MS
from kb.index.rows import normalise_package


def _dicts(cursor: sqlite3.Cursor, make: Callable[[Iterable[tuple[str, Any]]], dict[str, Any]] = dict) -> list[Any]:
    names = [d[0] for d in cursor.description]
    return [make(zip(names, row, strict=True)) for row in cursor]


def front_matters(db: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    """id -> front matter (as indexed) of the entries named."""
    rows = db.execute(
        "SELECT id, front_matter FROM entries WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(ids)]
    )
    return {entry_id: stored_json.unpacked(stored) for entry_id, stored in rows}


def releases(db: sqlite3.Connection, package: str | None = None) -> list[dict[str, Any]]:
    """Release entries (kb release), of one package (by its pip name) or all, oldest first."""
    rows = _dicts(
        db.execute(
            "SELECT entry_id AS id, recorded, package, version, date FROM release_rows ORDER BY recorded, entry_id"
        )
    )
    for row in rows:
        row["package"] = normalise_package(str(row["package"] or ""))
    return [row for row in rows if package is None or row["package"] == normalise_package(package)]


def grouped_candidates(
    db: sqlite3.Connection, where: str, params: list[Any], by: str, package: str | None = None
) -> list[dict[str, Any]]:
    """Runs and reports matching a WHERE over `entries e` (kb.index.query.Filters), newest first, each with its
    group value (`by`: backend or mode, or the version of `package`) and whether it holds figures at all."""
    group = "v.version" if package else f"e.{by}"
    join = "JOIN versions v ON v.entry = e.n AND v.package = ?" if package else ""
    return _dicts(
        db.execute(
            f"SELECT e.id, e.path, e.recorded, e.status, e.kind, e.backend, e.mode, {group} AS grp, "
            "(EXISTS (SELECT 1 FROM timings t WHERE t.entry = e.n) "
            "OR EXISTS (SELECT 1 FROM metrics m WHERE m.entry = e.n)) AS has_figures "
            f"FROM entries e {join} WHERE {where} AND e.kind IN ('run', 'report') AND {group} IS NOT NULL "
            "ORDER BY e.recorded DESC, e.id DESC",
            [*([normalise_package(package)] if package else []), *params],
        )
    )


def entry_path(db: sqlite3.Connection, entry_id: str) -> str | None:
    row = db.execute("SELECT path FROM entries WHERE id = ?", [entry_id]).fetchone()
    return row[0] if row else None


# -- trends ------------------------------------------------------------------------------------------
def trend_rows(db: sqlite3.Connection, metric: str, workload: str, package: str) -> list[dict[str, Any]]:
    """Each run or report of a workload with its value of a metric or timing, the package's version, the
    step time beside it and what splits series apart (mode, status, source, settings, precision, devices, cache,
    tags, the device sync that says whether its times are launch times)."""
    # INDEXED BY: left to itself SQLite may look each entry's versions up through the by-package index,
    # scanning every row of that package for every entry (quadratic: seconds at 10,000 entries).
    rows = _dicts(
        db.execute(
            "SELECT e.id, e.recorded, e.backend, e.mode, e.status, e.kind, e.source, "
            "COALESCE((SELECT value FROM metrics m WHERE m.entry = e.n AND m.name = ?), "
            "(SELECT seconds FROM timings t WHERE t.entry = e.n AND t.name = ?)) "
            "AS value, "
            "(SELECT version FROM versions v INDEXED BY versions_entry WHERE v.entry = e.n AND v.package = ?) "
            "AS version, "
            "(SELECT better FROM metrics m WHERE m.entry = e.n AND m.name = ?) "
            "AS better, e.step_s_median AS step_s, e.front_matter, "
            "(SELECT json_group_array(tag) FROM tags g WHERE g.entry = e.n) AS tags "
            "FROM entries e WHERE e.workload = ? AND e.kind IN ('run', 'report') ORDER BY e.recorded, e.id",
            [metric, metric, normalise_package(package), metric, workload],
        )
    )
    for row in rows:
        data = stored_json.unpacked(row.pop("front_matter"))
        for name, path in _TREND_SECTIONS.items():
            row[name] = _member(data, path)
        row["tags"] = stored_json.loads(row["tags"])
    return rows


# What splits a trend's series apart, by the front matter's path to it.
_TREND_SECTIONS = {
    "settings": ("settings",),
    "precision": ("precision",),
    "cache": ("compile", "cache"),
    "accelerators": ("hardware", "accelerators"),
    "device_sync": ("timings", "device_sync"),
}


def _member(data: Any, path: tuple[str, ...]) -> Any:
    """The value at `path` in a front matter, None where a section on the way is absent or not a mapping."""
    for name in path:
        if not isinstance(data, dict):
            return None
        data = data.get(name)
    return data


def figure_names(db: sqlite3.Connection) -> list[str]:
    """Every metric and timing name recorded (for 'did you mean')."""
    return [row[0] for row in db.execute("SELECT DISTINCT name FROM metrics UNION SELECT DISTINCT name FROM timings")]


# -- decisions ---------------------------------------------------------------------------------------
def decision_paths(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT path FROM entries WHERE kind = 'decision' ORDER BY recorded, id")]


def workload_backend_pairs(db: sqlite3.Connection, ids: list[str]) -> list[tuple[str | None, str | None]]:
    return db.execute(
        "SELECT DISTINCT workload, backend FROM entries WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)],
    ).fetchall()


def runs_after(db: sqlite3.Connection, workload: str | None, backend: str | None, since: str) -> list[str]:
    """Runs of a workload and backend recorded after a moment, oldest first."""
    return [
        row[0]
        for row in db.execute(
            "SELECT id FROM entries WHERE kind = 'run' AND workload IS ? AND backend IS ? AND recorded > ? "
            "ORDER BY recorded, id",
            [workload, backend, since],
        )
    ]


def evidence_versions(db: sqlite3.Connection, package: str, ids: list[str]) -> list[str]:
    """The versions of a package the entries named recorded."""
    return [
        row[0]
        for row in db.execute(
            "SELECT v.version FROM versions v JOIN entries e ON e.n = v.entry "
            "WHERE v.package = ? AND e.id IN (SELECT value FROM json_each(?))",
            [normalise_package(package), json.dumps(ids)],
        )
    ]


WHEN_COLUMNS = {"workload", "backend", "mode", "status", "kind"}


def figure_after(
    db: sqlite3.Connection, name: str, since: str, filters: tuple[tuple[str, str], ...]
) -> list[tuple[str, float | None, str]]:
    """(id, value of a metric or timing NAME, recorded) of the entries recorded after a moment that match the
    filters (column = value, columns from WHEN_COLUMNS), oldest first."""
    clauses = ["e.recorded > ?"]
    params: list[Any] = [since]
    for key, value in filters:
        if key not in WHEN_COLUMNS:
            raise ValueError(key)
        clauses.append(f"e.{key} = ?")
        params.append(value)
    return db.execute(
        "SELECT e.id, COALESCE((SELECT value FROM metrics m WHERE m.entry = e.n AND m.name = ?), "
        "(SELECT seconds FROM timings t WHERE t.entry = e.n AND t.name = ?)) AS v, e.recorded "
        f"FROM entries e WHERE {' AND '.join(clauses)} ORDER BY e.recorded, e.id",
        [name, name, *params],
    ).fetchall()


def citing_decisions(db: sqlite3.Connection) -> dict[str, list[tuple[str, str]]]:
    """evidence id -> [(decision id, decision title)] of the decisions that cite it."""
    found: dict[str, list[tuple[str, str]]] = {}
    for target, entry_id, title in db.execute(
        "SELECT l.target, e.id, e.title FROM links l JOIN entries e ON e.n = l.entry "
        "WHERE l.role = 'evidence' AND e.kind = 'decision' ORDER BY e.recorded, e.id"
    ):
        found.setdefault(target, []).append((entry_id, title))
    return found


def entry_versions(db: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, str]]:
    """id -> {package (pip name): version} of the entries named."""
    found: dict[str, dict[str, str]] = {}
    for entry_id, package, version in db.execute(
        "SELECT e.id, v.package, v.version FROM versions v JOIN entries e ON e.n = v.entry "
        "WHERE e.id IN (SELECT value FROM json_each(?))",
        [json.dumps(ids)],
    ):
        found.setdefault(entry_id, {})[package] = version
    return found


def cell_versions(db: sqlite3.Connection, workload: str | None = None) -> list[dict[str, Any]]:
    """Each version of its backend's packages the measured runs (completed or not) of a board cell record (kb/index/
    rows.py: board_versions): (workload, backend, mode, package, version), newest first by the newest run on it."""
    where, params = ("WHERE workload = ?", [workload]) if workload is not None else ("", [])
    # char(1) sorts below any character of a date or an id: the text orders as (recorded, id) does.
    return _dicts(
        db.execute(
            "SELECT workload, backend, mode, package, version, MAX(recorded || char(1) || entry_id) AS newest "
            f"FROM board_versions {where} GROUP BY workload, backend, mode, package, version ORDER BY newest DESC",
            params,
        )
    )


def cell_runs(
    db: sqlite3.Connection,
    cell: tuple[str, str | None, str | None],
    package: str | None,
    versions: list[str] | None,
    *,
    within: bool,
    compiled: bool = False,
    make: Callable[[Iterable[tuple[str, Any]]], dict[str, Any]] = dict,
) -> list[Any]:
    """The measured runs (completed or not) of one board cell (workload, backend, mode), newest first, as the board
    keeps them (`facts` as stored, read with `board_facts`), with their entry's author and host: those whose version
    of `package` (one of its backend's: kb/index/rows.py BACKEND_PACKAGES) is one of `versions` (`within`), or is not
    (not `within`), each with that `version` (None within `versions`: one of them); all of them, with their version,
    when `versions` is None. `compiled`: only the completed runs with a compile time."""
    on = (
        "SELECT b.entry FROM board_versions b WHERE b.workload = ? AND b.backend IS ? AND b.mode IS ? "
        "AND b.package = ? AND b.version IN (SELECT value FROM json_each(?))"
    )
    chosen, params = "", []
    if versions is not None:
        chosen = f"AND r.entry {'' if within else 'NOT '}IN ({on})"
        params = [*cell, package or "", json.dumps(versions)]
    if compiled:
        chosen += (" AND r.category = 'completed' AND EXISTS (SELECT 1 FROM entries e WHERE e.n = r.entry "
                   "AND e.compile_s IS NOT NULL)")  # fmt: skip
    # Within `versions` the release is known: each row's own version is not looked up.
    version, looked_up = ("NULL", []) if versions is not None and within else (_VERSION, [package or ""])
    return _dicts(
        db.execute(
            "SELECT r.entry_id AS id, r.recorded, r.workload, r.backend, r.mode, r.kind, r.status, r.category, "
            f"r.class, r.facts, {version} AS version, e.author, e.host FROM board_rows r "
            "JOIN entries e ON e.n = r.entry WHERE r.workload = ? AND r.backend IS ? "
            f"AND r.mode IS ? AND r.category IN ('completed', 'other') {chosen} "
            "ORDER BY r.recorded DESC, r.entry_id DESC",
            [*looked_up, *cell, *params],
        ),
        make,
    )


_VERSION = "(SELECT b.version FROM board_versions b WHERE b.entry = r.entry AND b.package = ? LIMIT 1)"


# -- the board's counts and picks, from the tables the index keeps for it (board_rows, board_cells; kb/index/db.py):
# one row per cell and category, whatever the number of entries
def _workload_clause(workload: str | None) -> tuple[str, list[Any]]:
    return ("c.workload = ?", [workload]) if workload is not None else ("1", [])


def cell_counts(db: sqlite3.Connection, workload: str | None = None) -> list[dict[str, Any]]:
    """(workload, backend, mode) of every run and report, with the measured runs tried and completed."""
    where, params = _workload_clause(workload)
    return _dicts(
        db.execute(
            "SELECT c.workload, c.backend, c.mode, SUM(CASE WHEN c.category IN ('completed', 'other') THEN c.n "
            "ELSE 0 END) AS tried, SUM(CASE c.category WHEN 'completed' THEN c.n ELSE 0 END) AS completed "
            f"FROM board_cells c WHERE {where} AND c.category != 'coverage' GROUP BY c.workload, c.backend, c.mode",
            params,
        )
    )


def cell_failures(db: sqlite3.Connection, workload: str | None = None) -> list[dict[str, Any]]:
    """The most common failure classes (else statuses) of each (workload, backend, mode)'s measured runs that
    did not complete, all of those tied: how many, and the newest one's id and message."""
    where, params = _workload_clause(workload)
    # Only the top classes: a cell's newest failure and its message are looked up for them alone (at 100,000
    # entries, every class of every cell was eight times as many lookups).
    rows = _dicts(
        db.execute(
            "SELECT c.workload, c.backend, c.mode, c.class, c.n AS count, (SELECT r.entry_id FROM board_rows r "
            "WHERE r.workload = c.workload AND r.backend IS c.backend AND r.mode IS c.mode AND r.class = c.class "
            "ORDER BY r.recorded DESC, r.entry_id DESC LIMIT 1) AS entry "
            "FROM (SELECT c.*, MAX(c.n) OVER (PARTITION BY c.workload, c.backend, c.mode) AS top FROM board_cells c "
            f"WHERE {where} AND c.category = 'other') c WHERE c.n = c.top",
            params,
        )
    )
    messages = dict(
        db.execute(
            "SELECT e.id, f.message FROM failures f JOIN entries e ON e.n = f.entry "
            "WHERE e.id IN (SELECT value FROM json_each(?))",
            [json.dumps([row["entry"] for row in rows])],
        ).fetchall()
    )
    for row in rows:
        row["message"] = messages.get(row["entry"])
    return rows


def newest_per_cell(
    db: sqlite3.Connection, workload: str | None, *, completed: int, other: int, reports: int
) -> list[dict[str, Any]]:
    """The newest entries of each (workload, backend, mode) by category (completed and other measured runs,
    reports, and the one newest coverage entry), newest first, a report's and a coverage entry's with what the board
    reads of it (`facts`, in the front matter's shape: board_facts in kb/index/rows.py; None for a run)."""
    where, params = _workload_clause(workload)
    picks = " UNION ALL ".join(
        "SELECT r.entry_id AS id, r.recorded, r.workload, r.backend, r.mode, r.kind, r.status, r.category, r.facts "
        "FROM (SELECT DISTINCT workload, backend, mode FROM board_cells c "
        f"WHERE {where} AND category = '{category}') c "
        "JOIN board_rows r ON r.rowid IN (SELECT x.rowid FROM board_rows x WHERE x.workload = c.workload "
        f"AND x.backend IS c.backend AND x.mode IS c.mode AND x.category = '{category}' "
        "ORDER BY x.recorded DESC, x.entry_id DESC LIMIT ?)"
        for category in ("completed", "other", "report", "coverage")
    )
    rows = _dicts(db.execute(picks, [*params, completed, *params, other, *params, reports, *params, 1]))
    rows.sort(key=lambda row: (row["recorded"], row["id"]), reverse=True)  # SQLite's sort of them cost four times more
    for row in rows:  # the runs are listed by id: only a report's or a coverage entry's facts are read
        measured = row["category"] in ("completed", "other")
        row["facts"] = None if measured else board_facts(row["facts"])
    return rows


# -- the evidence a verdict judges: every run of a cell, not the newest few --------------------------------------------
def workload_evidence(db: sqlite3.Connection, workload: str | None = None) -> list[dict[str, Any]]:
    """Every run, report and coverage entry of a workload (all workloads when None), newest first, with its author,
    host, failure message and its front matter (`data`, parsed here: Python's reader takes the NaN and infinity a
    run may hold, where SQLite's JSON functions refuse the whole document)."""
    where = "e.workload = ?" if workload is not None else "e.workload IS NOT NULL"
    rows = _dicts(
        db.execute(
            "SELECT e.id, e.recorded, e.kind, e.status, e.backend, e.mode, e.workload, e.source, e.failure_class, "
            "e.author, e.host, (SELECT f.message FROM failures f WHERE f.entry = e.n LIMIT 1) AS failure_message, "
            f"e.front_matter FROM entries e WHERE {where} AND e.kind IN ('run', 'report', 'coverage') "
            "ORDER BY e.recorded DESC, e.id DESC",
            [workload] if workload is not None else [],
        )
    )
    for row in rows:
        row["data"] = json.loads(stored_json.unpacked_text(row.pop("front_matter")))
    return rows


def workload_names(db: sqlite3.Connection) -> set[str]:
    """Every workload an entry names (for "did you mean")."""
    return {row[0] for row in db.execute("SELECT DISTINCT workload FROM entries WHERE workload IS NOT NULL")}


def backend_names(db: sqlite3.Connection) -> set[str]:
    """Every backend an entry names (for "did you mean")."""
    return {row[0] for row in db.execute("SELECT DISTINCT backend FROM entries WHERE backend IS NOT NULL")}


def package_names(db: sqlite3.Connection) -> set[str]:
    """Every package a run recorded the version of, or a release names (for "did you mean")."""
    found = {row[0] for row in db.execute("SELECT DISTINCT package FROM versions")}
    return found | {normalise_package(str(row[0])) for row in db.execute("SELECT DISTINCT package FROM release_rows")}


def board_entries(db: sqlite3.Connection, workload: str | None = None) -> list[dict[str, Any]]:
    """Every row the board keeps (kb/index/db.py: board_rows) of a workload (all workloads when None), newest first:
    its category (completed, other, report, coverage), failure class, and `facts` (None for a run that did not
    complete), with no limit per cell."""
    where, params = ("r.workload = ?", [workload]) if workload is not None else ("1", [])
    rows = _dicts(
        db.execute(
            "SELECT r.entry_id AS id, r.recorded, r.workload, r.backend, r.mode, r.kind, r.status, r.category, "
            f"r.class, r.facts FROM board_rows r WHERE {where} ORDER BY r.recorded DESC, r.entry_id DESC",
            params,
        )
    )
    for row in rows:
        row["facts"] = board_facts(row["facts"])
    return rows


def board_facts(stored: str | None) -> dict[str, Any] | None:
    """A board row's facts in the front matter's shape, absent sections left out as in the entry."""
    facts = stored_json.loads(stored) if stored else None
    return {key: value for key, value in facts.items() if value is not None} if facts else None


def hardware_sections(db: sqlite3.Connection, ids: list[str]) -> dict[str, dict[str, Any]]:
    """id -> the hardware section (accelerators, CPU, threads, load) of the entries named, {} where there is none."""
    found: dict[str, dict[str, Any]] = {}
    for entry_id, data in front_matters(db, ids).items():
        found[entry_id] = data["hardware"] if isinstance(data.get("hardware"), dict) else {}
    return found


def workload_candidates(
    db: sqlite3.Connection,
    workload: str | None,
    backend: str | EllipsisType | None = ...,
    mode: str | EllipsisType | None = ...,
    *,
    where: tuple[str, list[Any]] = ("1", []),
    by: str = "backend",
    package: str | None = None,
) -> list[dict[str, Any]]:
    """`grouped_candidates` of one workload's runs within `where` (a kb.index.query.Filters clause), on `backend`
    in `mode` where given (None: runs that record none; ...: any)."""
    clause, params = where
    terms, values = ["e.workload IS ?", f"({clause})"], [workload, *params]
    for column, value in (("backend", backend), ("mode", mode)):
        if value is not ...:
            terms.append(f"e.{column} IS ?")
            values.append(value)
    return grouped_candidates(db, " AND ".join(terms), values, by, package)


# -- the verdicts' bootstrap intervals, kept between calls ------------------------------------------------------------
def stored_intervals(db: sqlite3.Connection) -> dict[str, tuple[float, float]]:
    """digest -> (low, high) of every interval kept (kb.answers.intervals)."""
    return {key: (low, high) for key, low, high in db.execute("SELECT key, low, high FROM intervals")}


def store_intervals(db: sqlite3.Connection, found: dict[str, tuple[float, float]]) -> bool:
    """Keep intervals computed now, in one transaction; False where the index cannot take them at once (read only,
    or another process writing, or the caller's own transaction open): they are computed again next time, and
    nothing waits for them."""
    if db.in_transaction:
        return False
    try:
        db.execute("PRAGMA busy_timeout = 0")
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO intervals VALUES (?, ?, ?)",
                           [(key, low, high) for key, (low, high) in found.items()])  # fmt: skip
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
