"""The board: for each workload and backend (and mode), the answer the evidence gives, and what is missing.

A cell's figure comes from all its comparable completed runs of its current state, not from one run: the runs on
the newest release of the backend's package (older releases are history), on the baseline's shapes and device
count, kept out where the machine was busy (counted) or where numerics failed. Their median, n and spread, and the
verdict of kb.answers.verdict on the ratio to the baseline's runs (faster, slower, equivalent within the floor,
inconclusive). As in PyTorch's own compiler benchmark runner, a speed-up counts only where numerics passed: a
failed check (or a figure that became NaN) makes it zero, a missing one leaves it "unchecked" and out of the
ranking. A cell whose runs on the newest release all failed says so and is never the answer. Reported figures
(kind `report`) sit apart and are never ranked against measured ones, and so do launch times (a run that could not
wait for its device): shown with their footing, never a baseline, a ratio or a winner.
"""

from __future__ import annotations

import sqlite3
import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import cache, lru_cache, partial
from typing import Any

from kb.answers import figures, verdict
from kb.answers.compare import agreement_of
from kb.answers.figures import Figure
from kb.answers.intervals import Intervals
from kb.index import answers
from kb.index.rows import BACKEND_PACKAGES, NO_BACKEND, normalise_package

REPORTS = 3  # the newest reported figures shown per cell
RUNS_LISTED = 5  # the newest runs a cell links to
LatestRelease = Callable[[tuple[str, ...]], "dict[str, Any] | None"]  # a backend's packages -> their newest release
LAUNCH_TIMES = figures.LAUNCH_TIMES  # the words compare and trend say too
REPORTED_WAIT = "compile_s"  # a report's figure where it gives no rate: how long compiling took, never ranked
SET_INCUMBENT = "set it with kb init --incumbent BACKEND (or [answers] incumbent in kb.toml)"
Key = tuple[str, "str | None"]


@dataclass
class Check:
    """One question of the checklist: yes (True), no (False) or not applicable / unknown (None)."""

    question: str
    ok: bool | None
    evidence: str | None = None  # the entry that answers it
    detail: str = ""  # what was found, or what to run next


@dataclass
class Cell:
    workload: str
    backend: str
    mode: str | None
    tried: int = 0
    completed: int = 0
    failure: dict[str, Any] | None = None  # {class, count, message, entry}: the most common failure
    figure: Figure | None = None  # the median of the runs counted (its entry: the newest of them)
    numerics: str = "unchecked"
    numerics_note: str = ""  # why numerics failed: "loss became NaN at step 5", or the check's verdict
    ratio: float | None = None  # how many times faster than the baseline, median for median
    speedup: float | None = None  # the ratio where numerics passed, 0 where they failed, None otherwise
    verdict: str = ""  # baseline, counted, unchecked, numerics failed, fails on ..., not comparable ..., ...
    comparison: dict[str, Any] | None = None  # kb.answers.verdict.Verdict: faster/slower/equivalent/inconclusive
    n: int = 0  # runs behind the figure
    spread: list[float] | None = None  # lowest and highest figure of those runs
    busy: int = 0  # runs of the current state kept out because the machine was busy
    busy_only: bool = False  # every run of the current state was on a busy machine: a figure, never a verdict
    release: str | None = None  # "torch-neuronx 2.27.1": the backend package's release the figure comes from
    evidence_date: str | None = None  # when the newest run behind the figure was recorded
    reproduction: str = ""  # "reproduced by 2 people on 3 hosts: agrees, equivalent within the floor (n=...)"
    current_failure: str = ""  # "fails on torch-neuronx 2.27.1: compile_error x2"
    history: str = ""  # "passed on 2.26.0 at x2.17": the older release's figure, where the newest one failed
    differences: list[str] = field(default_factory=list)  # against the baseline's runs
    peak_memory_gb: float | None = None  # the highest peak memory of the runs behind the figure
    cold_compile: dict[str, Any] | None = None  # {seconds, entry}
    warm_compile: dict[str, Any] | None = None
    other_compile: dict[str, Any] | None = None  # {seconds, entry, cache}: neither cold nor warm (mixed, unknown)
    stayed: str = "unknown"  # yes, no, unknown, or n/a on the CPU
    launch_times: bool = False  # its figure is launch times: nothing waited for the device
    entries: list[str] = field(default_factory=list)  # the runs behind the cell, newest first
    note: str = ""  # why there is no figure, where there is none
    checklist: list[Check] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.backend} · {self.mode}" if self.mode else self.backend


@dataclass
class Reported:
    workload: str
    backend: str
    mode: str | None
    entry: str
    title: str
    figure: Figure | None
    publisher: str | None
    date: str | None


@dataclass
class WorkloadBoard:
    workload: str
    baseline: str | None  # the baseline cell's label
    baseline_reason: str
    best: str  # the answer in one line: which backend wins, on what footing
    cells: list[Cell]
    reported: list[Reported]
    coverage: list[dict[str, Any]] = field(default_factory=list)  # {backend, entry, text}: the newest per backend


@dataclass
class Board:
    incumbent: str
    workloads: list[WorkloadBoard]
    floor: float = verdict.FLOOR
    guessed: str = ""  # without an incumbent: what the board guessed, and how to set it

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for workload, board in zip(data["workloads"], self.workloads, strict=True):
            for cell, source in zip(workload["cells"], board.cells, strict=True):
                cell["label"] = source.label
        return data


@dataclass
class Run:
    """One entry of a cell as the board judges it."""

    row: dict[str, Any]
    release: str | None  # of the backend's package, local label folded

    @property
    def data(self) -> dict[str, Any]:
        return self.row["data"]

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def completed(self) -> bool:
        return self.row["status"] == "completed"

    @property
    def failure_class(self) -> str:
        return str(self.row["failure_class"] or self.row["status"] or "unknown")


def board(
    db: sqlite3.Connection, *, incumbent: str = "", workload: str | None = None, floor: float = verdict.FLOOR
) -> Board:
    # What the index keeps for the board (kb/index/schema.py: board_rows, board_cells): each cell's counts, newest
    # rows and the versions its runs record; then only the runs of each cell's newest release (older ones only where
    # that release failed), their facts parsed when a verdict reads them: most runs of a large base are history.
    releases = answers.releases(db)
    counted = answers.cell_counts(db, workload)
    newest = answers.newest_per_cell(db, workload, completed=RUNS_LISTED, other=RUNS_LISTED, reports=REPORTS)
    recorded: dict[tuple[str, Key], list[tuple[str, str]]] = {}
    for row in answers.cell_versions(db, workload):
        recorded.setdefault((row["workload"], _key(row)), []).append((row["package"], str(row["version"])))
    failures: dict[tuple[str, Key], dict[str, Any]] = {}
    for row in answers.cell_failures(db, workload):  # the most common failure of each cell, ties to the newest
        key = (row["workload"], _key(row))
        if key not in failures or (row["count"], row["entry"]) > (failures[key]["count"], failures[key]["entry"]):
            failures[key] = {"class": row["class"], "count": row["count"], "message": row["message"],
                             "entry": row["entry"]}  # fmt: skip

    @cache  # once per backend's packages, not per cell: the releases grow with the knowledge base
    def latest(packages: tuple[str, ...]) -> dict[str, Any] | None:
        from kb.index.query import version_key

        known = [r for r in releases if r["package"] in packages and r["version"]]
        return max(known, key=lambda r: version_key(figures.release_of(str(r["version"])))) if known else None

    grouped: dict[str, Evidence] = {}
    for row in newest:
        grouped.setdefault(row["workload"], Evidence(db, recorded)).newest.append(row)
    for row in counted:
        grouped[row["workload"]].counted.append(row)
    bootstrap = Intervals(db)
    found = [_workload(name, evidence, latest, incumbent, floor, failures, bootstrap)
             for name, evidence in sorted(grouped.items())]  # fmt: skip
    bootstrap.save()
    guessed = ""
    if not incumbent and found:
        guessed = (f"No incumbent: each workload's baseline is guessed (its backend with the most completed runs, "
                   f"eager first); {SET_INCUMBENT}.")  # fmt: skip
    return Board(incumbent, found, floor, guessed)


@dataclass
class Evidence:
    """A workload's evidence as the index keeps it for the board; a cell's runs are read when it is judged."""

    db: sqlite3.Connection
    recorded: dict[tuple[str, Key], list[tuple[str, str]]]  # (package, version) of a cell's runs, newest first
    counted: list[dict[str, Any]] = field(default_factory=list)  # per cell: tried and completed runs
    newest: list[dict[str, Any]] = field(default_factory=list)  # per cell and category the newest rows, newest first

    def runs(
        self,
        cell: Cell,
        raw: str | None,
        package: str | None,
        release: str | None,
        *,
        within: bool,
        compiled: bool = False,
    ) -> list[Run]:
        """The cell's measured runs (`raw`: its backend as stored) on `release` of `package` (or, not `within`, on
        another or none), all of them when there is no release; newest first. `compiled`: only the completed runs
        with a compile time."""
        recorded = self.recorded.get((cell.workload, (cell.backend, cell.mode)), [])
        versions = (
            [v for name, v in recorded if name == package and v and _release_of(v) == release] if release else None
        )
        cell_key = (cell.workload, raw, cell.mode)
        rows = answers.cell_runs(self.db, cell_key, package, versions, within=within, compiled=compiled, make=_Row)
        for row in rows:
            row["failure_class"] = row["class"]
            row["versions"] = {package: str(row["version"])} if package and row["version"] is not None else {}
        if versions is not None and within:
            return [Run(row, release) for row in rows]
        return [Run(row, _release_of(row["versions"][package]) if row["versions"].get(package) else None)
                for row in rows]  # fmt: skip


class _Row(dict[str, Any]):
    """A board row whose `data` (what the board reads of the entry) is parsed when first read: its facts, or for a
    run that did not complete (which keeps none) its id, date and the version of its backend's package."""

    def __missing__(self, key: str) -> Any:
        if key != "data":
            raise KeyError(key)
        data = answers.board_facts(self["facts"]) or {
            "id": self["id"], "recorded": self["recorded"], "versions": self["versions"]
        }  # fmt: skip
        self["data"] = data
        return data


def _key(row: dict[str, Any]) -> Key:
    return row["backend"] or NO_BACKEND, row["mode"]


def backend_package(backend: str, runs: list[dict[str, Any]]) -> str | None:
    """The package whose release is a backend's state: the first of its packages its runs record."""
    for package in BACKEND_PACKAGES.get(backend, (backend,)):
        if any(package in (row.get("versions") or _versions(row["data"])) for row in runs):
            return package
    return None


def _versions(data: dict[str, Any]) -> dict[str, str]:
    return {_package(k): str(v) for k, v in (data.get("versions") or {}).items()}


_release_of = lru_cache(maxsize=4096)(figures.release_of)  # thousands of runs name a few versions


@cache  # a few package names, met in every run
def _package(name: Any) -> str:
    return normalise_package(str(name))


def _workload(
    name: str,
    evidence: Evidence,
    latest: LatestRelease,
    incumbent: str,
    floor: float,
    failures: dict[tuple[str, Key], dict[str, Any]],
    bootstrap: verdict.Bootstrap,
) -> WorkloadBoard:
    reports: list[tuple[Key, dict[str, Any]]] = []
    coverage: dict[str, dict[str, Any]] = {}
    listed: dict[Key, list[str]] = {}
    for row in evidence.newest:  # newest first
        kind, data = row["category"], row["facts"] or {}
        if kind == "coverage":
            coverage.setdefault(_key(row)[0], data)
        elif kind == "report":
            reports.append((_key(row), data))
        else:
            listed.setdefault(_key(row), []).append(str(row["id"]))
    cells: dict[Key, Cell] = {}
    states: dict[Key, State] = {}
    for row in evidence.counted:
        key = _key(row)
        cell = cells[key] = Cell(name, *key, failure=failures.get((name, key)))
        cell.tried, cell.completed = row["tried"], row["completed"]
        cell.entries = listed.get(key, [])[:RUNS_LISTED]
        states[key] = _state(cell, row["backend"], evidence.recorded.get((name, key), []), evidence)
    base_key, reason = _baseline(cells, states, incumbent)
    base = states[base_key] if base_key else None
    for key, cell in cells.items():
        _judge(cell, states[key], base, key == base_key, floor, bootstrap)
        newest = states[key].figure_runs[0] if states[key].figure_runs else None
        cell.checklist = checklist(cell, newest.data if newest else None, coverage.get(cell.backend), latest)
    reported = []
    for key, found in reports:
        provenance = found.get("provenance") or {}
        # A report without a rate may report a wait (27 min of compiling): shown, never ranked.
        figure = figures.headline(found) or figures.headline(found, REPORTED_WAIT)
        reported.append(Reported(name, *key, found["id"], found.get("title") or found["id"], figure,
                                 provenance.get("publisher"), provenance.get("date")))  # fmt: skip
    ordered = sorted(cells.values(), key=lambda c: (c.backend, c.mode or ""))
    base_label = cells[base_key].label if base_key else None
    tested = [{"backend": backend, "entry": str(found.get("id")), "text": coverage_text(found)}
              for backend, found in sorted(coverage.items())]  # fmt: skip
    return WorkloadBoard(name, base_label, reason, _best(ordered, cells.get(base_key) if base_key else None, base),
                         ordered, reported, tested)  # fmt: skip


@dataclass
class State:
    """A cell's current state: the runs on the newest release of its backend's package, and its history."""

    package: str | None
    release: str | None
    current: list[Run]  # newest first
    older: list[str]  # the other releases its runs are on
    on: Callable[[str], list[Run]]  # the runs on one of them, newest first: read only where asked for
    figure_runs: list[Run]  # current, completed, not busy, numerics not failed, with a figure; newest first
    busy_only: bool = False  # figure_runs were all on a busy machine


def _state(cell: Cell, raw: str | None, recorded: list[tuple[str, str]], evidence: Evidence) -> State:
    """`recorded`: the (package, version) the cell's runs record, newest first; `raw`: its backend as stored."""
    from kb.index.query import version_key

    held = {package for package, _ in recorded}
    package = next((name for name in BACKEND_PACKAGES.get(cell.backend, (cell.backend,)) if name in held), None)
    versions = [version for name, version in recorded if name == package and version]
    known = list(dict.fromkeys(_release_of(version) for version in versions))
    release = max(known, key=version_key) if known else None
    current = evidence.runs(cell, raw, package, release, within=True) if cell.tried else []
    older = [known_release for known_release in known if known_release != release]
    cell.busy = sum(1 for run in current if run.completed and figures.busy(run.data))
    measured = [run for run in current if run.completed and figures.headline(run.data)]
    usable = [run for run in measured if not figures.busy(run.data)]
    if not usable and measured:
        # Only runs on a busy machine: their figure is shown, but no verdict stands on them.
        usable, cell.busy_only = measured, True
    if usable and figures.numerics(usable[0].data) == "failed":
        # The current state fails its numerics: its figure is shown, at a speed-up of zero, and never a baseline.
        cell.numerics = "failed"
        cell.numerics_note = figures.nonfinite(usable[0].data) or "its numerics check failed"
        figure_runs = [run for run in usable if figures.numerics(run.data) == "failed"]
    else:
        figure_runs = [run for run in usable if figures.numerics(run.data) != "failed"]
    if figure_runs:
        # Launch times and device times never make one figure: the newest run says which the cell shows.
        cell.launch_times = figures.launch_times(figure_runs[0].data)
        figure_runs = [run for run in figure_runs if figures.launch_times(run.data) == cell.launch_times]
    state = State(package, release, current, older, partial(evidence.runs, cell, raw, package, within=True),
                  figure_runs, cell.busy_only)  # fmt: skip
    if release and package:
        cell.release = f"{package} {release}"
    if current and not any(run.completed for run in current) and release:
        classes = Counter(run.failure_class for run in current)
        said = ", ".join(f"{name} ×{count}" for name, count in classes.most_common())
        cell.current_failure = f"fails on {package} {release}: {said}"
    # Where the newest release has no completed run, the compile times come from the older ones that have one.
    completed = [run for run in current if run.completed]
    if not completed and release:
        completed = evidence.runs(cell, raw, package, release, within=False, compiled=True)
    _compiles(cell, (run.data for run in completed))
    return state


def _compiles(cell: Cell, runs: Iterator[dict[str, Any]]) -> None:
    for run in runs:  # newest first
        if cell.cold_compile and cell.warm_compile and cell.other_compile:
            break  # the older runs change nothing: each is the newest of its kind
        seconds = (run.get("timings") or {}).get("compile_s")
        kind = figures.compile_kind(run)
        if not isinstance(seconds, (int, float)):
            continue
        if kind is None and cell.other_compile is None:
            cache = (run.get("compile") or {}).get("cache") or "unknown"
            cell.other_compile = {"seconds": float(seconds), "entry": run.get("id"), "cache": cache}
        if kind == "cold" and cell.cold_compile is None:
            cell.cold_compile = {"seconds": float(seconds), "entry": run.get("id")}
        if kind == "warm" and cell.warm_compile is None:
            cell.warm_compile = {"seconds": float(seconds), "entry": run.get("id")}


def _sound(cell: Cell, state: State) -> str:
    """Why a cell cannot be a baseline (empty when it can): a baseline is never a failed or numerics-failed state."""
    if cell.current_failure:
        return cell.current_failure
    if cell.numerics == "failed":
        return f"its newest run on {cell.release or 'its release'} failed numerics"
    if not state.figure_runs:
        return "no completed, measured run with a figure" + (f" on {cell.release}" if cell.release else "")
    if cell.launch_times:
        return figures.LAUNCH_TIMES_WHY
    return ""


def _baseline(cells: dict[Key, Cell], states: dict[Key, State], incumbent: str) -> tuple[Key | None, str]:
    """The incumbent's cell (kb.toml [answers] incumbent, kb init --incumbent, or --incumbent), else a guess: the
    backend with the most completed runs. Never a cell whose current state failed or failed numerics."""
    choices = [key for key in cells if not _sound(cells[key], states[key])]

    def most(keys: list[Key]) -> Key:
        """The backend with the most completed runs, and of its modes eager (what compiling is measured against),
        else its mode with the most."""
        per_backend = Counter[str]()
        for key in keys:
            per_backend[key[0]] += cells[key].completed
        backend = min(per_backend, key=lambda b: (-per_backend[b], b))
        modes = [k for k in keys if k[0] == backend]
        return min(modes, key=lambda k: (k[1] != "eager", -cells[k].completed, k[1] or ""))

    if incumbent:
        backend, _, mode = incumbent.replace("·", " ").partition(" ")
        mode = mode.strip()
        named = [k for k in cells if k[0] == backend and (not mode or k[1] == mode)]
        matching = [k for k in choices if k in named]
        if matching:
            return most(matching), "the incumbent"
        why = (
            (f"the incumbent {incumbent}: " + _sound(cells[most(named)], states[most(named)]))
            if named
            else (f"the incumbent {incumbent} has no usable run here")
        )
        if not choices:
            return None, why
        return most(choices), f"{why}; guessed: most completed runs"
    if not choices:
        return None, "no completed, measured run with a figure"
    return most(choices), "guessed: most completed runs"


def _judge(
    cell: Cell, state: State, base: State | None, is_base: bool, floor: float, bootstrap: verdict.Bootstrap
) -> None:
    """The cell's figure (the median of its comparable runs) and its verdict against the baseline's runs."""
    runs = state.figure_runs
    if not runs:
        cell.note = cell.current_failure or _why_empty(cell)
        _history(cell, state, base, floor, bootstrap)
        return
    newest = runs[0].data
    # On the CPU there is no accelerator to leave: one answer for the board, its checklist and the site.
    cell.stayed = "n/a" if cell.backend == "cpu" else figures.stayed(newest)
    if cell.numerics != "failed":
        cell.numerics = figures.numerics(newest)
    if cell.launch_times or base is None or is_base or not base.figure_runs:
        sample, peers = _same_setup(runs, runs[0]), _same_setup(runs, runs[0], machine=False)
        _figure(cell, sample, figures.headline(newest).name if figures.headline(newest) else None, peers, floor)  # type: ignore[union-attr]
        cell.verdict = LAUNCH_TIMES if cell.launch_times else "baseline" if is_base else "no baseline figure"
        return
    base_sample = _same_setup(base.figure_runs, base.figure_runs[0])
    base_shapes = figures.shapes(base_sample[0].data)
    matching = [run for run in runs if not figures.shape_differences(base_shapes, figures.shapes(run.data))]
    pool = matching or runs
    sample, peers = _same_setup(pool, pool[0]), _same_setup(pool, pool[0], machine=False)
    if not matching:
        cell.differences = figures.shape_differences(base_shapes, figures.shapes(newest))
    name = next((n for n in figures.HEADLINES if figures.headline(base_sample[0].data, n)
                 and figures.headline(sample[0].data, n)), None)  # fmt: skip
    _figure(cell, sample, name, peers, floor)
    base_values = [f.value for f in (figures.headline(run.data, name) for run in base_sample) if f] if name else []
    if not base_values or cell.figure is None:
        cell.verdict = "no common figure with the baseline"
        return
    if cell.differences:
        cell.verdict = "not comparable: " + ", ".join(cell.differences)
        return
    base_devices = figures.devices(base_sample[0].data)
    if name == "step_s" and base_devices != cell.figure.devices:
        cell.verdict = f"not comparable: {base_devices} vs {cell.figure.devices} devices, no throughput to normalise"
        return
    values = [f.value for f in (figures.headline(run.data, name) for run in sample) if f]
    judged = verdict.judge(
        base_values, values, higher_is_better=name in figures.THROUGHPUT, floor=floor, bootstrap=bootstrap
    )
    if cell.busy_only or base.busy_only:
        judged = replace(judged, verdict="inconclusive", reason="runs on a busy machine decide nothing")
    cell.comparison = judged.as_dict()
    cell.ratio = judged.ratio
    if cell.ratio is None:
        cell.verdict = "a zero figure"
        return
    if base_devices != cell.figure.devices:
        cell.differences.append(f"per device: {base_devices} vs {cell.figure.devices} devices")
    if cell.numerics == "passed":
        cell.speedup, cell.verdict = cell.ratio, "counted"
    elif cell.numerics == "failed":
        cell.speedup, cell.verdict = 0.0, "numerics failed"
    else:
        cell.verdict = "unchecked"


def _same_setup(runs: list[Run], like: Run, *, machine: bool = True) -> list[Run]:
    """The runs of the configuration of `like` (figures.configuration) on its hardware: its repeats; with
    `machine=False` on any hardware, the runs that may reproduce it."""
    wanted = figures.configuration(like.data, hardware=machine)
    return [run for run in runs if figures.configuration(run.data, hardware=machine) == wanted]


def _figure(cell: Cell, sample: list[Run], name: str | None, peers: list[Run], floor: float) -> None:
    """The median of the sample's figures, with n, spread, release and date of the evidence, and peak memory;
    whether its peers (the same configuration on any host) reproduce it."""
    found = [(run, figures.headline(run.data, name)) for run in sample]
    found = [(run, figure) for run, figure in found if figure is not None]
    if not found:
        return
    newest = found[0][1]
    values = [figure.value for _, figure in found]
    median = statistics.median(values)
    cell.figure = Figure(newest.name, median, newest.unit, median * newest.devices, newest.devices, newest.entry)
    cell.n = len(values)
    low, high = verdict.spread(values) or (median, median)
    cell.spread = [low, high]
    cell.evidence_date = str(found[0][0].row["recorded"])[:10]
    peaks = [figures.peak_memory_gb(run.data, cell.backend == "cpu") for run, _ in found]
    cell.peak_memory_gb = max((peak for peak in peaks if peak is not None), default=None)
    others = [(run, figures.headline(run.data, name)) for run in peers]
    others = [(run, figure) for run, figure in others if figure is not None]
    values = [figure.value for _, figure in others]
    cell.reproduction = reproduction([run.row for run, _ in others], values, newest.name, floor)


def reproduction(rows: list[dict[str, Any]], values: list[float], name: str, floor: float) -> str:
    """Whether others reproduced a figure (the runs of its configuration on any hardware, newest first), by the
    rule of kb rerun's agreement: the runs by the newest one's author on its host against those by another author
    or on another host, reproduced where they agree (equivalent within the floor). A host is its name on its
    hardware: two machines called `vm` are two hosts."""
    people = {row.get("author") for row in rows if row.get("author")}
    hosts = {_who(row)[1:] for row in rows if row.get("host")}
    if len(people) < 2 and len(hosts) < 2:
        who = f" (one author{', one host' if hosts else ''})" if people else ""
        return "not reproduced" + who
    own = [value for row, value in zip(rows, values, strict=True) if _who(row) == _who(rows[0])]
    others = [value for row, value in zip(rows, values, strict=True) if _who(row) != _who(rows[0])]
    outcome, judged = agreement_of(own, others, name, floor)
    by = f"{len(people)} {'people' if len(people) != 1 else 'person'}" if people else "unknown authors"
    where = f"{by} on {len(hosts)} host{'s' if len(hosts) != 1 else ''}"
    said = {"agrees": f"reproduced by {where}: agrees", "disagrees": f"not reproduced by {where}: disagrees"}
    return f"{said.get(outcome, f'reproduction by {where} undecided')}, {judged.text()}"


def _who(row: dict[str, Any]) -> tuple[Any, Any, Any]:
    return row.get("author"), row.get("host"), figures.machine(row["data"])


def _history(cell: Cell, state: State, base: State | None, floor: float, bootstrap: verdict.Bootstrap) -> None:
    """Where the newest release failed: the figure of the newest older release that passed, as history."""
    if not cell.current_failure:
        return
    for release in sorted(state.older, key=_version_key, reverse=True):
        runs = [run for run in state.on(release) if run.completed
                and not figures.busy(run.data) and figures.headline(run.data)
                and figures.numerics(run.data) != "failed"]  # fmt: skip
        if not runs:
            continue
        text = f"passed on {release}"
        if base is not None and base.figure_runs and not figures.launch_times(runs[0].data):
            name = next((n for n in figures.HEADLINES if figures.headline(base.figure_runs[0].data, n)
                         and figures.headline(runs[0].data, n)), None)  # fmt: skip
            if name:
                judged = verdict.judge(
                    [f.value for f in (figures.headline(r.data, name) for r in base.figure_runs) if f],
                    [f.value for f in (figures.headline(r.data, name) for r in runs) if f],
                    higher_is_better=name in figures.THROUGHPUT, floor=floor, bootstrap=bootstrap,
                )  # fmt: skip
                if judged.ratio is not None:
                    text += f" at ×{judged.ratio:.3g}"
        cell.history = text
        cell.note = f"{cell.current_failure}; {text}"
        return


def _version_key(release: str) -> Any:
    from kb.index.query import version_key

    return version_key(release)


def _why_empty(cell: Cell) -> str:
    if cell.tried == 0:
        return "only reported figures"
    if cell.completed == 0:
        return f"only failed runs ({cell.tried})"
    if cell.busy:
        return f"its completed runs were on a busy machine ({cell.busy}), kept out"
    return "no figure recorded in its completed runs"


def _best(cells: list[Cell], base_cell: Cell | None, base: State | None) -> str:
    """The answer in one line: a winner only with a verdict of faster and numerics passed."""
    if base_cell is None:
        notes = {cell.note for cell in cells}
        return "none yet; " + (notes.pop() if len(notes) == 1 else "no completed, measured run with a figure")
    name = base_cell.label
    others = [c for c in cells if c is not base_cell]
    backends = {c.backend for c in cells}
    only = f"; only {next(iter(backends))} so far" if len(backends) == 1 else ""
    compared = [c for c in others if c.comparison is not None]
    if not compared and any(c.launch_times for c in others):
        launched = ", ".join(c.label for c in others if c.launch_times)
        return f"nothing else timed on the device ({launched}: {LAUNCH_TIMES}){only}"
    if not compared:
        setup = (
            ", ".join(f"{k} {v}" for k, v in sorted(figures.shapes(base.figure_runs[0].data).items()))
            if (base and base.figure_runs)
            else ""
        )
        return "nothing else measured in the baseline's configuration" + (f" ({setup})" if setup else "") + only

    def mode_note(cell: Cell) -> str:
        return f" ({cell.mode} vs {base_cell.mode})" if cell.mode != base_cell.mode else ""

    winners = [c for c in compared if c.numerics == "passed" and c.comparison["verdict"] == "faster"]
    if winners:
        top = max(winners, key=lambda c: c.ratio or 0)
        footing = verdict.Verdict(**top.comparison).footing
        return f"{top.label}: ×{top.ratio:.3g} over {name}{mode_note(top)}, numerics passed ({footing}){only}"
    faster = [c for c in compared if c.comparison["verdict"] == "faster"]
    if faster:
        top = max(faster, key=lambda c: c.ratio or 0)
        return (
            f"nothing beats {name} with numerics checked (fastest: {top.label} ×{top.ratio:.3g}, {top.verdict}){only}"
        )
    unsure = [c for c in compared if c.comparison["verdict"] == "inconclusive" and c.numerics != "failed"]
    if unsure:
        top = max(unsure, key=lambda c: c.ratio or 0)
        judged = verdict.Verdict(**top.comparison)
        return f"no verdict yet: {top.label}{mode_note(top)} is {judged.text()}{only}"
    if all(c.comparison["verdict"] == "slower" for c in compared):
        return f"{name} (the baseline) is fastest{only}"
    return f"no faster backend than {name}: the others are equivalent or slower{only}"


def checklist(
    cell: Cell, run: dict[str, Any] | None, coverage: dict[str, Any] | None, latest: LatestRelease
) -> list[Check]:
    """The questions to ask of a result before believing it, answered from the cell's picked run."""
    if run is None:
        missing = "no completed, measured run: " + (cell.note or "record one with kb record")
        return [*(Check(q, False, None, missing) for q in QUESTIONS[:-1]), _release_check(cell, None, latest)]
    rid = str(run.get("id"))
    timings = run.get("timings") or {}
    # Versions read when a run was recorded after the fact are the recording machine's, not the run's.
    run_time = (run.get("provenance") or {}).get("environment") != "record_time"
    settings_todo = "record with kb record and give --setting batch=..., dtype=..."
    if run.get("versions") and not run_time:
        settings_todo = (
            "its versions are the recording machine's (recorded after the fact): record the run "
            "itself, kb record -- COMMAND, or import its run folder, kb record --from DIR"
        )
    checks = [
        _yes(QUESTIONS[0], bool(run.get("versions")) and bool(run.get("settings")) and run_time, rid,
             "", settings_todo),
        _yes(QUESTIONS[1], isinstance(timings.get("step_s"), dict) and any(k in timings for k in figures.ONE_OFF[1:]),
             rid, "",
             "time steps with ingest.pytorch.run (r.step) so compile and warm-up stay out of the steady state"),
        _compile_check(cell),
        _stayed_check(cell, rid),
        _numerics_check(cell, rid, run.get("numerics")),
        _adaptations_check(run),
        _coverage_check(cell, coverage),
        _release_check(cell, run, latest),
    ]  # fmt: skip
    return checks


QUESTIONS = (
    "settings and versions recorded",
    "preparation apart from steady state",
    "a cold and a warm compile measured",
    "work stayed on the accelerator",
    "numerics agree with a reference",
    "adaptations recorded",
    "test coverage disclosed",
    "evidence newer than the latest release",
)


def _yes(question: str, ok: bool, entry: str, found: str, todo: str) -> Check:
    return Check(question, ok, entry if ok else None, found if ok else todo)


def _compile_check(cell: Cell) -> Check:
    question = QUESTIONS[2]
    if cell.mode == "eager":
        return Check(question, None, None, "eager: nothing compiles")
    cold, warm = cell.cold_compile, cell.warm_compile
    if cold and warm:
        return Check(question, True, cold["entry"], f"cold {cold['seconds']:.3g} s, warm {warm['seconds']:.3g} s")
    todo = []
    if not cold:
        todo.append("a cold compile: TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) kb record --tag cold ...")
    if not warm:
        todo.append("a warm compile: the same run again with the cache kept, --tag warm")
    return Check(question, False, (cold or warm or {}).get("entry"), "; ".join(todo))


def _stayed_check(cell: Cell, entry: str) -> Check:
    question = QUESTIONS[3]
    if cell.stayed == "n/a":
        return Check(question, None, None, "cpu: there is no accelerator to leave")
    if cell.stayed == "yes":
        return Check(question, True, entry)
    if cell.stayed == "no":
        return Check(question, False, entry, "work fell back to the CPU: see the run's fallbacks")
    return Check(question, False, None, "no placement evidence: record through ingest.pytorch.run")


def _numerics_check(cell: Cell, entry: str, section: Any) -> Check:
    question = QUESTIONS[4]
    if cell.numerics == "passed":
        return Check(question, True, entry, _against(section if isinstance(section, dict) else {}))
    if cell.numerics == "failed":
        return Check(question, False, entry, "numerics failed: its speed-up counts as zero")
    return Check(question, False, None, "check outputs against a reference: r.check_numerics(outputs, reference)")


def _against(section: dict[str, Any]) -> str:
    """What "passed" was checked against: `loss curve against eager-loss.txt, rtol 0.05`."""
    what = section.get("compared") or "outputs"
    reference = section.get("reference")
    tolerances = ", ".join(f"{name} {section[name]:g}" for name in ("rtol", "atol")
                           if isinstance(section.get(name), (int, float)) and section[name])  # fmt: skip
    if not reference and not tolerances:
        return ""
    return f"{what}" + (f" against {reference}" if reference else "") + (f", {tolerances}" if tolerances else "")


def _adaptations_check(found: dict[str, Any]) -> Check:
    if "adaptations" not in found:
        return Check(
            QUESTIONS[5], False, None, "say what had to change to make it run (adaptations), or that nothing did"
        )
    listed = found["adaptations"]
    count = len(listed) if isinstance(listed, list) else int(listed or 0)
    return Check(QUESTIONS[5], True, str(found.get("id")), f"{count} adaptation{'s' if count != 1 else ''}")


def _coverage_check(cell: Cell, coverage: dict[str, Any] | None) -> Check:
    if not coverage:
        todo = f"kb ingest junit results.xml --workload {cell.workload} --backend {cell.backend}"
        return Check(QUESTIONS[6], False, None, todo)
    return Check(QUESTIONS[6], True, str(coverage.get("id")), coverage_text(coverage))


def coverage_text(coverage: dict[str, Any]) -> str:
    """`2 passed, 0 skipped of 4 (50% pass)`: a coverage entry's totals and its pass rate."""
    totals = coverage.get("coverage") or {}
    passed, total = totals.get("passed"), totals.get("total")
    rate = f" ({passed / total:.0%} pass)" if isinstance(passed, int) and isinstance(total, int) and total else ""
    return (
        f"{totals.get('passed', '?')} passed, {totals.get('skipped', '?')} skipped of {totals.get('total', '?')}{rate}"
    )


def _release_check(cell: Cell, run: dict[str, Any] | None, newest: LatestRelease) -> Check:
    """Whether the evidence is on the newest release: "not run on X" apart from "run on X and failed"."""
    from kb.index.query import version_key

    packages = BACKEND_PACKAGES.get(cell.backend, (cell.backend,))
    latest = newest(packages)
    ran_on = cell.release.partition(" ")[2] if cell.release else None
    unseen = latest is not None and (
        ran_on is None or version_key(figures.release_of(str(latest["version"]))) > version_key(ran_on)
    )
    if cell.current_failure and not unseen:
        failed = cell.current_failure.partition(": ")[2]
        return Check(
            QUESTIONS[7],
            False,
            cell.failure["entry"] if cell.failure else None,
            f"run on {cell.release} and failed: {failed}" + (f"; {cell.history}" if cell.history else ""),
        )
    if latest is None:  # nothing to be newer than, with or without a run
        return Check(QUESTIONS[7], None, None, f"no release of {' or '.join(packages)} recorded (kb release)")
    if run is None:
        return Check(QUESTIONS[7], False, None, "no completed, measured run: " + (cell.note or "record one"))
    versions = _versions(run)
    used = versions.get(latest["package"])
    if used is not None:
        newer = not unseen
        found = f"ran on {latest['package']} {used}; latest release {latest['version']}"
    else:
        newer = str(run.get("recorded") or "") > str(latest["recorded"])
        found = f"recorded after {latest['package']} {latest['version']} was" if newer else ""
    if newer:
        return Check(QUESTIONS[7], True, str(run.get("id")), found)
    todo = f"not run on {latest['package']} {latest['version']} ({latest['id']}): the evidence is older; run it again"
    return Check(QUESTIONS[7], False, latest["id"], todo)
