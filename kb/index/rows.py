"""An entry as index rows: one for `entries`, its words for the full-text table, its rows for the normalised
tables, and the rows derived from it for the answers (the board's row with its facts, a release's row).

They are made where the entry is parsed (a sync's worker process, kb.index.parse), so that the sync only writes
them: plain tuples cross between the processes in a third of the time an Entry (with its line numbers) took to
unpickle, and making them was a fifth of the writing process's time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kb.index import stored_json
from kb.index.fulltext import document, packed
from kb.model.entry import Entry
from kb.model.values import DEVICE_PEAK, DEVICE_PEAK_PHASE, finite_number, metric_nonfinite, nonfinite_word

# What the rows hold of an entry: part of the index's format (kb.index.schema), so that changing what a row holds
# rebuilds every index made before.
ROWS_VERSION = 9
# The `entries` row's columns but its path (relative to the entries folder: the sync knows it), in a row's order.
ENTRY_COLUMNS = (
    "id", "title", "kind", "status", "recorded", "author", "backend", "mode", "workload", "task", "model", "source",
    "host", "failure_class", "wall_s", "compile_s", "first_step_s", "step_s_median", "git_commit", "environment",
    "attachments", "front_matter",
)  # fmt: skip
# The normalised tables' columns, in their rows' order. `entry` is the entry's number in the index (entries.n), which
# only the writing sync knows: the rows made here hold the entry's id in its place (kb.index.sync._write swaps it).
CHILD_COLUMNS = {
    "tags": ("entry", "tag"),
    "settings": ("entry", "name", "value", "number"),
    "versions": ("entry", "package", "version"),
    "metrics": ("entry", "name", "value", "unit", "phase", "better"),
    "timings": ("entry", "name", "seconds"),
    "failures": ("entry", "class", "message", "explanation", "phase", "assigned"),
    "links": ("entry", "role", "target"),
    "accelerators": ("entry", "vendor", "name", "count", "memory_gb"),
}
CHILD_TABLES = tuple(CHILD_COLUMNS)
BOARD_COLUMNS = ("entry_id", "recorded", "workload", "backend", "mode", "kind", "status", "category", "class", "facts")
RELEASE_COLUMNS = ("entry_id", "recorded", "package", "version", "date")
BOARD_VERSION_COLUMNS = ("entry_id", "workload", "backend", "mode", "recorded", "package", "version")
# The rows derived for the answers, by table: each goes with its entry as the child rows do.
DERIVED_COLUMNS = {
    "board_rows": BOARD_COLUMNS,
    "release_rows": RELEASE_COLUMNS,
    "board_versions": BOARD_VERSION_COLUMNS,
}
# The derived tables that also name their entry by its number (an `entry` column before these; the writing sync
# knows it): the board's, which join the entry and each other by it.
NUMBERED = ("board_rows", "board_versions")
# The packages whose release is a backend's state, by backend (others: the package named as the backend), the first
# one its runs record deciding: the board's "newest release" of a cell, and the checklist's "latest release".
BACKEND_PACKAGES = {
    "neuron": ("torch-neuronx", "neuronx-cc"), "xla": ("torch-xla",), "tpu": ("torch-tpu", "torch-xla", "libtpu"),
    "cuda": ("torch",), "rocm": ("torch",), "cpu": ("torch",), "mps": ("torch",), "xpu": ("torch",),
}  # fmt: skip

# What the board reads of a run, report or coverage entry (kb/answers/board.py, figures.py), declared here once and
# kept in its board row's facts, in the front matter's shape, so that judging a cell parses about a kilobyte per
# candidate instead of the entry's front matter: these fields whole, ...
BOARD_WHOLE = ("id", "title", "recorded", "tags", "settings", "versions")
# ... of these sections only these members (a section only when one of them holds a value): a report's source, where
# the versions were read, the numerics check and its NaN counts, the compile's cache, the peak memory, ...
BOARD_MEMBERS = {
    "coverage": ("passed", "skipped", "total"),
    "provenance": ("publisher", "date", "environment"),
    "precision": ("dtype",),
    "compile": ("cache",),
    "numerics": ("verdict", "nan", "inf", "nan_steps", "compared", "reference", "rtol", "atol"),
    "memory": (DEVICE_PEAK, "host_peak_rss_gb"),
}
# ... of the metrics the headline rates, the peak memory and a report's compile wait (value and unit), and any metric
# that is no finite number (a NaN fails the numerics), of the timings all but the run's span (_SPAN, unless no finite
# number: among the rest `device_sync`, which says whether the figures are launch times) with the steps' median only,
# the count of adaptations, of the hardware what says which machine it was and whether it was busy, and the
# placement verdict.
BOARD_METRICS = ("tokens_per_s", "samples_per_s", "peak_memory_gb", "compile_s")
NO_BACKEND = "(no backend)"  # the board's name for the cell of runs that name no backend
_SPAN = ("started", "ended", "wall_s")  # the timings the board does without


@dataclass(frozen=True)
class Rows:
    """One entry's rows, each a tuple in its columns' order."""

    id: str
    id_line: int  # the line of the front matter's id, for a problem naming it
    entry: tuple  # ENTRY_COLUMNS
    words: tuple  # kb.index.fulltext.DEFAULT_FIELDS
    packed: bytes  # the words as the index keeps its text (kb.index.fulltext.packed)
    children: dict[str, list[tuple]]  # CHILD_COLUMNS and DERIVED_COLUMNS, only the tables the entry has rows in


def rows_of(entry: Entry) -> Rows:
    row = entry_row(entry)
    children = {table: found for table, found in child_rows(entry).items() if found}
    derived = {"board_rows": board_row(entry, row), "release_rows": release_row(entry)}
    children.update({table: [found] for table, found in derived.items() if found is not None})
    if derived["board_rows"] is not None and (versions := board_versions(entry, derived["board_rows"])):
        children["board_versions"] = versions
    words = tuple(document(entry).values())
    return Rows(entry.id, entry.lines.get(("id",), 1), row, words, packed(words), children)


def board_row(entry: Entry, row: tuple) -> tuple | None:
    """The board's row of a run, report or coverage entry of a workload (BOARD_COLUMNS), made from its entries row:
    its category as the board counts it, and for a run that did not complete its failure class (else its status)
    instead of facts (failed runs are counted and listed, never judged)."""
    kind, status, recorded, workload, backend, mode, source, failure_class = (
        row[_AT[name]] for name in ("kind", "status", "recorded", "workload", "backend", "mode", "source",
                                    "failure_class")
    )  # fmt: skip
    if workload is None or kind not in ("run", "report", "coverage"):
        return None
    if kind == "coverage":
        category = "coverage"
    elif kind == "report" or source == "reported":
        category = "report"
    else:
        category = "completed" if status == "completed" else "other"
    other = category == "other"
    failure = (failure_class or status or "unknown") if other else None
    facts = None if other else stored_json.dumps(board_facts(entry.data), compact=True)
    return (entry.id, recorded, workload, backend, mode, kind, status, category, failure, facts)


def board_versions(entry: Entry, board: tuple) -> list[tuple]:
    """A measured run's versions of its backend's packages (BOARD_VERSION_COLUMNS), beside its cell: which release
    each run is on, read for a whole cell without reading its runs."""
    entry_id, recorded, workload, backend, mode, _, _, category, _, _ = board
    if category not in ("completed", "other"):
        return []
    packages = BACKEND_PACKAGES.get(backend or NO_BACKEND, (backend or NO_BACKEND,))
    versions = entry.data.get("versions")
    return [
        (entry_id, workload, backend, mode, recorded, normalise_package(str(name)), str(version))
        for name, version in (versions.items() if isinstance(versions, dict) else ())
        if normalise_package(str(name)) in packages and version is not None
    ]


def board_facts(data: dict[str, Any]) -> dict[str, Any]:
    """What the board reads of an entry (BOARD_WHOLE, BOARD_MEMBERS, BOARD_METRICS...); None where it has none."""
    facts: dict[str, Any] = {name: data.get(name) for name in BOARD_WHOLE}
    timings = data.get("timings")
    if isinstance(timings, dict):
        timings = {name: value for name, value in timings.items() if name not in _SPAN or nonfinite_word(value)}
        step = timings.get("step_s")
        if isinstance(step, dict):
            timings["step_s"] = {"median": step.get("median")}
        facts["timings"] = timings
    else:
        facts["timings"] = None
    metrics = data.get("metrics") if isinstance(data.get("metrics"), dict) else {}
    kept = {name: _rate(metrics.get(name)) for name in BOARD_METRICS}
    kept |= {name: metric for name, metric in metrics.items() if metric_nonfinite(metric)}
    facts["metrics"] = {name: rate for name, rate in kept.items() if rate is not None} or None
    for section, members in BOARD_MEMBERS.items():
        found = data.get(section) if isinstance(data.get(section), dict) else {}
        phases = [key for key in found if str(key).startswith(DEVICE_PEAK_PHASE)] if section == "memory" else []
        wanted = [*members, *phases]
        kept_members = {member: found[member] for member in wanted if found.get(member) is not None}
        facts[section] = kept_members or None
    adaptations = data.get("adaptations")
    facts["adaptations"] = len(adaptations) if isinstance(adaptations, list) else None
    facts["hardware"] = _machine(data.get("hardware"))
    fallbacks = data.get("fallbacks")
    stayed = fallbacks.get("stayed_on_device") if isinstance(fallbacks, dict) else None
    facts["fallbacks"] = {"stayed_on_device": stayed} if isinstance(stayed, bool) else None
    return facts


def _machine(hardware: Any) -> dict[str, Any] | None:
    """Of the hardware, what the board reads: the accelerators' names and counts, the CPU and its threads (which
    machine it was), and whether the machine was busy."""
    if not isinstance(hardware, dict):
        return None
    accelerators = hardware.get("accelerators")
    load = hardware.get("load")
    kept = {
        "accelerators": [{key: one.get(key) for key in ("name", "count") if one.get(key) is not None}
                         for one in accelerators if isinstance(one, dict)] if isinstance(accelerators, list) else None,
        "cpu": hardware.get("cpu"),
        "cpu_threads": hardware.get("cpu_threads"),
        "load": {"busy": load.get("busy")} if isinstance(load, dict) and load.get("busy") is not None else None,
    }  # fmt: skip
    return {key: value for key, value in kept.items() if value is not None} or None


def _rate(metric: Any) -> Any:
    """A headline rate as the board reads it: its value and unit (those given), or the bare figure."""
    if isinstance(metric, dict):
        return {name: metric[name] for name in ("value", "unit") if metric.get(name) is not None}
    return metric


def release_row(entry: Entry) -> tuple | None:
    """A release entry's row (RELEASE_COLUMNS): what the board's checklist and the decisions compare with."""
    if entry.kind != "release":
        return None
    fields = (entry.get(f"release.{name}") for name in ("package", "version", "date"))
    return (entry.id, entry.recorded, *(_scalar(value) for value in fields))


def _scalar(value: Any) -> Any:
    """A value for an SQL column: a section or list as its JSON text."""
    return stored_json.dumps(value) if isinstance(value, (dict, list)) else value


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
        finite_number(get("timings.wall_s")),
        finite_number(get("timings.compile_s")),
        finite_number(get("timings.first_step_s")),
        finite_number(get("timings.step_s.median")),
        get("git.commit"),
        get("provenance.environment"),
        _attachment_paths(get("attachments")),
        stored_json.packed(entry.data),
    )


def _attachment_paths(attachments: Any) -> str | None:
    """The paths an entry's attachments list (`kb check` looks for each file), as a JSON list; none when it lists
    none. The front matter is packed, so what a query reads of it is taken out here."""
    if not isinstance(attachments, list):
        return None
    paths = [item["path"] for item in attachments if isinstance(item, dict) and isinstance(item.get("path"), str)]
    return stored_json.dumps(paths) if paths else None


_AT = {name: place for place, name in enumerate(ENTRY_COLUMNS)}


def child_rows(entry: Entry) -> dict[str, list[tuple]]:
    data, entry_id = entry.data, entry.id
    rows: dict[str, list[tuple]] = {table: [] for table in CHILD_TABLES}
    rows["tags"] = [(entry_id, tag) for tag in data.get("tags") or []]
    for name, value in (data.get("settings") or {}).items():
        rows["settings"].append((entry_id, name, None if value is None else str(value), finite_number(value)))
    rows["versions"] = [
        (entry_id, normalise_package(name), version) for name, version in (data.get("versions") or {}).items()
    ]
    for name, metric in (data.get("metrics") or {}).items():
        if isinstance(metric, dict):
            rows["metrics"].append(
                (
                    entry_id,
                    name,
                    finite_number(metric.get("value")),
                    metric.get("unit"),
                    metric.get("phase"),
                    metric.get("better"),
                )
            )
    for name, value in (data.get("timings") or {}).items():
        seconds = value.get("median") if isinstance(value, dict) else value
        if finite_number(seconds) is not None:
            rows["timings"].append((entry_id, name, finite_number(seconds)))
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
                    finite_number(accelerator.get("memory_gb")),
                )
            )
    return rows


def normalise_package(name: str) -> str:
    """Distribution names compare as pip compares them: case and -/_/. do not matter."""
    return name.lower().replace("_", "-").replace(".", "-")
