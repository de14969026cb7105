"""An entry as index rows: one for `entries`, its words for the full-text table, and its rows for the normalised
tables.

They are made where the entry is parsed (a sync's worker process, kb.index.parse), so that the sync only writes
them: plain tuples cross between the processes in a third of the time an Entry (with its line numbers) took to
unpickle, and making them was a fifth of the writing process's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kb.entry import Entry
from kb.index import stored_json
from kb.index.fulltext import document

# The `entries` row's columns but its path (relative to the entries folder: the sync knows it), in a row's order.
ENTRY_COLUMNS = (
    "id", "title", "kind", "status", "recorded", "author", "backend", "mode", "workload", "task", "model", "source",
    "host", "failure_class", "wall_s", "compile_s", "first_step_s", "step_s_median", "git_commit", "front_matter",
)  # fmt: skip
# The normalised tables' columns, in their rows' order.
CHILD_COLUMNS = {
    "tags": ("entry_id", "tag"),
    "settings": ("entry_id", "name", "value", "number"),
    "versions": ("entry_id", "package", "version"),
    "metrics": ("entry_id", "name", "value", "unit", "phase", "better"),
    "timings": ("entry_id", "name", "seconds"),
    "failures": ("entry_id", "class", "message", "explanation", "phase", "assigned"),
    "links": ("entry_id", "role", "target"),
    "accelerators": ("entry_id", "vendor", "name", "count", "memory_gb"),
}
CHILD_TABLES = tuple(CHILD_COLUMNS)


@dataclass(frozen=True)
class Rows:
    """One entry's rows, each a tuple in its columns' order."""

    id: str
    id_line: int  # the line of the front matter's id, for a problem naming it
    entry: tuple  # ENTRY_COLUMNS
    words: tuple  # kb.index.fulltext.DEFAULT_FIELDS
    children: dict[str, list[tuple]]  # CHILD_COLUMNS, only the tables the entry has rows in


def rows_of(entry: Entry) -> Rows:
    children = {table: found for table, found in child_rows(entry).items() if found}
    return Rows(entry.id, entry.lines.get(("id",), 1), entry_row(entry), tuple(document(entry).values()), children)


def entry_row(entry: Entry) -> tuple:
    get = entry.get
    return (
        entry.id,
        entry.title,
        entry.kind,
        entry.status,
        entry.recorded,
        get("author"),
        get("backend"),
        get("mode"),
        get("workload.name"),
        get("workload.task"),
        get("workload.model"),
        get("provenance.source"),
        get("hardware.hostname"),
        get("failure.class"),
        _number(get("timings.wall_s")),
        _number(get("timings.compile_s")),
        _number(get("timings.first_step_s")),
        _number(get("timings.step_s.median")),
        get("git.commit"),
        stored_json.dumps(entry.data),
    )


def child_rows(entry: Entry) -> dict[str, list[tuple]]:
    data, entry_id = entry.data, entry.id
    rows: dict[str, list[tuple]] = {table: [] for table in CHILD_TABLES}
    rows["tags"] = [(entry_id, tag) for tag in data.get("tags") or []]
    for name, value in (data.get("settings") or {}).items():
        rows["settings"].append((entry_id, name, None if value is None else str(value), _number(value)))
    rows["versions"] = [
        (entry_id, normalise_package(name), version) for name, version in (data.get("versions") or {}).items()
    ]
    for name, metric in (data.get("metrics") or {}).items():
        if isinstance(metric, dict):
            rows["metrics"].append(
                (
                    entry_id,
                    name,
                    _number(metric.get("value")),
                    metric.get("unit"),
                    metric.get("phase"),
                    metric.get("better"),
                )
            )
    for name, value in (data.get("timings") or {}).items():
        seconds = value.get("median") if isinstance(value, dict) else value
        if _number(seconds) is not None:
            rows["timings"].append((entry_id, name, _number(seconds)))
    failure = data.get("failure")
    if isinstance(failure, dict) and failure:
        rows["failures"].append(
            (
                entry_id,
                failure.get("class"),
                failure.get("message"),
                failure.get("explanation"),
                failure.get("phase"),
                failure.get("assigned"),
            )
        )
    for role, targets in (data.get("links") or {}).items():
        for target in [targets] if isinstance(targets, str) else targets or []:
            rows["links"].append((entry_id, role, target))
    for accelerator in (data.get("hardware") or {}).get("accelerators") or []:
        if isinstance(accelerator, dict):
            rows["accelerators"].append(
                (
                    entry_id,
                    accelerator.get("vendor"),
                    accelerator.get("name"),
                    accelerator.get("count"),
                    _number(accelerator.get("memory_gb")),
                )
            )
    return rows


def normalise_package(name: str) -> str:
    """Distribution names compare as pip compares them: case and -/_/. do not matter."""
    return name.lower().replace("_", "-").replace(".", "-")


def _number(value: Any) -> float | None:
    """A number SQL may compare, sum and sort: NaN and the infinities (a diverged run) are kept in the front matter
    only, where the entry shows them, never taken for a figure."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
