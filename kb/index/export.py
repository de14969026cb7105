"""The index's tables as they leave kb (kb export): one table per entity, its columns typed and described,
its rows read in batches from one snapshot of the index, so an export of any size holds one batch in memory.

The schema here is the export's documented schema (docs/team.md prints it from TABLES); types are
Arrow's names: string, float64, int64, list<string>, and reviews (a list of {date, by, note}).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb.index import stored_json
from kb.model.entry import Entry
from kb.store.reviews import reviews_of


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: tuple[Column, ...]
    sql: str  # selects the columns in their order (or what `shape` makes them from)
    shape: Callable[[tuple, Path | None], tuple] | None = None  # a row and the entries folder
    batch_rows: int = 20_000  # rows read and written at a time: what the export holds in memory
    count_sql: str = ""  # counts the rows, where counting `sql` would cost more (a sort): for progress

    def counting(self) -> str:
        return self.count_sql or f"SELECT count(*) FROM ({self.sql})"


def _text(value: Any) -> str | None:
    """A field the schema leaves open (a review's, a link that may be a list) may hold a number or a list where
    the column is a text: exported as text (JSON for a list), not lost."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _ids(value: str | list[str] | None) -> list[str] | None:
    return [value] if isinstance(value, str) else value  # a link's target is an id or a list of ids


def _entry_row(row: tuple, entries: Path | None) -> tuple:
    """An entries row with its front matter as the JSON text it was packed from."""
    return (*row[:-1], stored_json.unpacked_text(row[-1]))


def _decision_row(row: tuple, entries: Path | None) -> tuple:
    """The index holds only entries the schema accepts: the decision's own fields have the types it says. Its
    reviews are files beside it (kb.store.reviews), read from the entries folder."""
    entry_id, title, recorded, author, front_matter, path = row
    data = json.loads(stored_json.unpacked_text(front_matter))
    decision, links = data.get("decision") or {}, data.get("links") or {}
    found = reviews_of(Entry(data=data, path=entries / path if entries else None))
    reviews = [
        {"date": _text(review.get("date")), "by": _text(review.get("by")), "note": _text(review.get("note"))}
        for review in found
    ]
    return (
        entry_id,
        title,
        recorded,
        author,
        *(decision.get(name) for name in ("status", "question", "choice", "rationale", "owner", "date")),
        decision.get("alternatives"),
        decision.get("triggers"),
        _ids(links.get("evidence")),
        _text(links.get("supersedes")),  # one id, as kb decide writes it (a list, as JSON)
        _text(links.get("superseded_by")),
        reviews,
    )


def _by_entry_id(table: str, columns: str, order: str = "x.rowid") -> str:
    """The rows of a table of entries' rows (`columns` of it), each with its entry's id in place of its number; in
    the order they were written, or `order` for a table without rowids (by entry and name)."""
    return f"SELECT e.id AS entry_id, {columns} FROM {table} x JOIN entries e ON e.n = x.entry ORDER BY {order}"


ENTRY_ID = Column("entry_id", "string", "the entry's id (entries.id)")

TABLES: tuple[Table, ...] = (
    Table(
        "entries",
        "one row per entry, oldest first",
        (
            Column("id", "string", "the entry's id, its file's name"),
            Column("path", "string", "its file, relative to entries/"),
            Column("title", "string", "its title"),
            Column("kind", "string", "run, report, coverage, decision, release, note, ..."),
            Column("status", "string", "completed, failed, killed, interrupted, running (runs)"),
            Column("recorded", "string", "when it was recorded: ISO 8601 in UTC, e.g. 2026-11-30T10:12:00Z"),
            Column("author", "string", "who ran or wrote it"),
            Column("backend", "string", "cuda, rocm, neuron, xla, tpu, mps, cpu, ..."),
            Column("mode", "string", "eager, compile, ..."),
            Column("workload", "string", "the workload's name"),
            Column("task", "string", "the workload's task"),
            Column("model", "string", "the workload's model"),
            Column("source", "string", "measured, imported or reported (provenance.source)"),
            Column("host", "string", "the machine it ran on"),
            Column("failure_class", "string", "why it failed, one of kb's failure classes"),
            Column("wall_s", "float64", "the command's wall time, seconds"),
            Column("compile_s", "float64", "compile time, seconds"),
            Column("first_step_s", "float64", "time to the first step, seconds"),
            Column("step_s_median", "float64", "median step time, seconds"),
            Column("git_commit", "string", "the commit of the code that ran"),
            Column("front_matter", "string", "the whole front matter as JSON: every field, also those above"),
        ),
        "SELECT id, path, title, kind, status, recorded, author, backend, mode, workload, task, model, source, "
        "host, failure_class, wall_s, compile_s, first_step_s, step_s_median, git_commit, front_matter "
        "FROM entries ORDER BY recorded, id",
        _entry_row,
        batch_rows=2_000,  # a front matter is kilobytes: 2,000 of them are about as much as 20,000 metrics
        count_sql="SELECT count(*) FROM entries",
    ),
    Table(
        "metrics",
        "one row per entry and metric",
        (
            ENTRY_ID,
            Column("name", "string", "the metric, e.g. tokens_per_s"),
            Column("value", "float64", "its value (null when not a number)"),
            Column("unit", "string", "its unit, e.g. tokens/s"),
            Column("phase", "string", "the phase it was measured in"),
            Column("better", "string", "higher or lower"),
        ),
        _by_entry_id("metrics", "name, value, unit, phase, better", "x.entry, x.name"),
    ),
    Table(
        "timings",
        "one row per entry and timed phase (a phase timed repeatedly gives its median)",
        (ENTRY_ID, Column("name", "string", "the phase, e.g. compile"), Column("seconds", "float64", "seconds")),
        _by_entry_id("timings", "name, seconds", "x.entry, x.name"),
    ),
    Table(
        "versions",
        "one row per entry and package version recorded with it",
        (
            ENTRY_ID,
            Column("package", "string", "the distribution, normalised as pip compares names: torch-neuronx"),
            Column("version", "string", "its version, e.g. 2.27.1"),
        ),
        _by_entry_id("versions", "package, version"),
    ),
    Table(
        "failures",
        "one row per entry that holds a failure",
        (
            ENTRY_ID,
            Column("class", "string", "the failure class"),
            Column("message", "string", "what the run said"),
            Column("explanation", "string", "why, as a person wrote it"),
            Column("phase", "string", "where it failed"),
            Column("assigned", "string", "auto (from a signature) or by a person"),
        ),
        _by_entry_id("failures", "class, message, explanation, phase, assigned"),
    ),
    Table(
        "tags",
        "one row per entry and tag",
        (ENTRY_ID, Column("tag", "string", "the tag")),
        _by_entry_id("tags", "tag"),
    ),
    Table(
        "settings",
        "one row per entry and setting",
        (
            ENTRY_ID,
            Column("name", "string", "the setting, e.g. batch_size"),
            Column("value", "string", "its value as text"),
            Column("number", "float64", "its value when a number"),
        ),
        _by_entry_id("settings", "name, value, number", "x.entry, x.name"),
    ),
    Table(
        "decisions",
        "one row per decision, oldest first",
        (
            ENTRY_ID,
            Column("title", "string", "what was decided, in one line"),
            Column("recorded", "string", "when it was recorded: ISO 8601 in UTC"),
            Column("author", "string", "who recorded it"),
            Column("status", "string", "proposed, accepted, rejected or superseded"),
            Column("question", "string", "the question it answers"),
            Column("choice", "string", "what was chosen"),
            Column("rationale", "string", "why"),
            Column("owner", "string", "who owns it"),
            Column("date", "string", "when it was decided: YYYY-MM-DD"),
            Column("alternatives", "list<string>", "the options considered"),
            Column("triggers", "list<string>", "when to revisit it, as kb decide --trigger takes them"),
            Column("evidence", "list<string>", "the ids of the entries it rests on"),
            Column("supersedes", "string", "the decision it replaces"),
            Column("superseded_by", "string", "the decision that replaced it"),
            Column("reviews", "reviews", "its reviews (kb revisit --ack): a list of {date, by, note}"),
        ),
        "SELECT id, title, recorded, author, front_matter, path FROM entries WHERE kind = 'decision' "
        "ORDER BY recorded, id",
        _decision_row,
        batch_rows=2_000,
    ),
)


@contextmanager
def snapshot(db: sqlite3.Connection) -> Iterator[None]:
    """Every table read from one state of the index, even while a sync writes to it."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def total_rows(db: sqlite3.Connection) -> int:
    """How many rows an export writes, all tables together (for its progress)."""
    return sum(db.execute(table.counting()).fetchone()[0] for table in TABLES)


def iter_batches(
    db: sqlite3.Connection, table: Table, size: int | None = None, entries: Path | None = None
) -> Iterator[list[tuple]]:
    """table's rows, size (else its batch_rows) at a time, in its columns' order (entries: the folder the files
    beside an entry are read from)."""
    size = size or table.batch_rows
    cursor = db.execute(table.sql)
    while batch := cursor.fetchmany(size):
        yield [table.shape(row, entries) for row in batch] if table.shape else batch
