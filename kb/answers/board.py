"""The board: for each workload and backend (and mode), the answer the evidence gives, and what is missing.

A cell holds the newest completed, measured run comparable with the workload's baseline (the incumbent):
its headline figure (throughput per device, else the median step time) and its speed-up over the
baseline. As in PyTorch's own compiler benchmark runner, a speed-up counts only where numerics passed:
a failed check makes it zero, a missing one leaves it "unchecked" and out of the ranking. Reported
figures (kind `report`) sit apart and are never ranked against measured ones.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from kb.answers import figures
from kb.answers.figures import Figure
from kb.index import answers

CANDIDATES = 4  # the newest completed runs of a cell looked through for a comparable one, and cold/warm compiles
REPORTS = 3  # the newest reported figures shown per cell
RUNS_LISTED = 5  # the newest runs a cell links to
NO_BACKEND = "(no backend)"
LatestRelease = Callable[[tuple[str, ...]], "dict[str, Any] | None"]  # a backend's packages -> their newest release
# Where a backend's releases come from (kb release PACKAGE): the checklist's "newer than the latest release".
BACKEND_PACKAGES = {
    "neuron": ("torch-neuronx", "neuronx-cc"), "xla": ("torch-xla",), "tpu": ("torch-tpu", "torch-xla", "libtpu"),
    "cuda": ("torch",), "rocm": ("torch",), "cpu": ("torch",), "mps": ("torch",), "xpu": ("torch",),
}  # fmt: skip


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
    figure: Figure | None = None
    numerics: str = "unchecked"
    ratio: float | None = None  # how many times faster than the baseline, figure for figure
    speedup: float | None = None  # the ratio where numerics passed, 0 where they failed, None otherwise
    verdict: str = ""  # baseline, counted, unchecked, numerics failed, not comparable ..., no baseline figure
    differences: list[str] = field(default_factory=list)  # against the baseline's run
    cold_compile: dict[str, Any] | None = None  # {seconds, entry}
    warm_compile: dict[str, Any] | None = None
    other_compile: dict[str, Any] | None = None  # {seconds, entry, cache}: neither cold nor warm (mixed, unknown)
    stayed: str = "unknown"  # yes, no, unknown, or n/a on the CPU
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


@dataclass
class Board:
    incumbent: str
    workloads: list[WorkloadBoard]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for workload, board in zip(data["workloads"], self.workloads, strict=True):
            for cell, source in zip(workload["cells"], board.cells, strict=True):
                cell["label"] = source.label
        return data


def board(db: sqlite3.Connection, *, incumbent: str = "", workload: str | None = None) -> Board:
    counts = answers.cell_counts(db, workload)
    failures = answers.cell_failures(db, workload)
    # Each with what the board reads of it, kept by the index: no entry's front matter is parsed here.
    rows = answers.newest_per_cell(db, workload, completed=CANDIDATES, other=RUNS_LISTED, reports=REPORTS)
    releases = answers.releases(db)

    @cache  # once per backend's packages, not per cell: the releases grow with the knowledge base
    def latest(packages: tuple[str, ...]) -> dict[str, Any] | None:
        from kb.index.query import version_key

        known = [r for r in releases if r["package"] in packages and r["version"]]
        return max(known, key=lambda r: version_key(figures.release_of(str(r["version"])))) if known else None

    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind, found in (("counts", counts), ("failures", failures), ("rows", rows)):
        for row in found:
            grouped.setdefault(row["workload"], {}).setdefault(kind, []).append(row)
    return Board(
        incumbent,
        [_workload(name, parts, latest, incumbent) for name, parts in sorted(grouped.items())],
    )


def _key(row: dict[str, Any]) -> tuple[str, str | None]:
    return row["backend"] or NO_BACKEND, row["mode"]


def _workload(
    name: str, parts: dict[str, list[dict[str, Any]]], latest: LatestRelease, incumbent: str
) -> WorkloadBoard:
    cells: dict[tuple[str, str | None], Cell] = {}
    for row in parts.get("counts", []):
        cells[_key(row)] = Cell(name, *_key(row), tried=int(row["tried"] or 0), completed=int(row["completed"] or 0))
    for key, found in _by_cell(parts.get("failures", [])).items():
        top = max(found, key=lambda row: (row["count"], row["entry"]))
        cells[key].failure = {"class": top["class"], "count": top["count"], "message": top["message"],
                              "entry": top["entry"]}  # fmt: skip
    candidates: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    reports: list[tuple[tuple[str, str | None], dict[str, Any]]] = []
    coverage: dict[str, dict[str, Any]] = {}
    for row in parts.get("rows", []):  # newest first
        key = _key(row)
        if row["category"] == "coverage":
            coverage.setdefault(key[0], row["facts"])
        elif row["category"] == "report":
            reports.append((key, row["facts"]))
        else:
            if len(cells[key].entries) < RUNS_LISTED:
                cells[key].entries.append(row["id"])
            if row["category"] == "completed":
                candidates.setdefault(key, []).append(row["facts"])
    for key, cell in cells.items():
        _compiles(cell, candidates.get(key, []))
    usable = {key: [d for d in found if figures.headline(d)] for key, found in candidates.items()}
    base_key, reason = _baseline(cells, usable, incumbent)
    base_run = usable[base_key][0] if base_key else None
    for key, cell in cells.items():
        run = _choose(cell, usable.get(key, []), base_run, key == base_key)
        if run is not None:
            _headline(cell, run, base_run, key == base_key)
        cell.checklist = checklist(cell, run, coverage.get(cell.backend), latest)
    reported = []
    for key, found in reports:
        provenance = found.get("provenance") or {}
        reported.append(Reported(name, *key, found["id"], found.get("title") or found["id"], figures.headline(found),
                                 provenance.get("publisher"), provenance.get("date")))  # fmt: skip
    ordered = sorted(cells.values(), key=lambda c: (c.backend, c.mode or ""))
    base = cells[base_key].label if base_key else None
    return WorkloadBoard(name, base, reason, _best(ordered, base), ordered, reported)


def _by_cell(rows: list[dict[str, Any]]) -> dict[tuple[str, str | None], list[dict[str, Any]]]:
    found: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(_key(row), []).append(row)
    return found


def _compiles(cell: Cell, runs: list[dict[str, Any]]) -> None:
    for run in runs:  # newest first
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


def _baseline(
    cells: dict[tuple[str, str | None], Cell], usable: dict[tuple[str, str | None], list], incumbent: str
) -> tuple[tuple[str, str | None] | None, str]:
    """The incumbent's cell (kb.toml [answers] incumbent, or --incumbent), else the most completed runs."""
    choices = [key for key, found in usable.items() if found]
    if not choices:
        return None, "no completed, measured run with a figure"

    def most(keys: list) -> tuple[str, str | None]:
        """The backend with the most completed runs, and of its modes eager (what compiling is measured
        against), else its mode with the most."""
        per_backend = Counter[str]()
        for key in keys:
            per_backend[key[0]] += cells[key].completed
        backend = min(per_backend, key=lambda b: (-per_backend[b], b))
        modes = [k for k in keys if k[0] == backend]
        return min(modes, key=lambda k: (k[1] != "eager", -cells[k].completed, k[1] or ""))

    if incumbent:
        backend, _, mode = incumbent.replace("·", " ").partition(" ")
        mode = mode.strip()
        matching = [k for k in choices if k[0] == backend and (not mode or k[1] == mode)]
        if matching:
            return most(matching), "the incumbent"
        return most(choices), f"the incumbent {incumbent} has no usable run here; most completed runs"
    return most(choices), "most completed runs"


def _choose(
    cell: Cell, runs: list[dict[str, Any]], base_run: dict[str, Any] | None, is_base: bool
) -> dict[str, Any] | None:
    """The newest usable run of the cell comparable with the baseline's (else its newest), with the differences
    stated; None, with the reason, when the cell has no usable run."""
    if not runs:
        cell.note = _why_empty(cell)
        return None
    if base_run is None or is_base:
        return runs[0]
    base = figures.shapes(base_run)
    differing = [(run, figures.shape_differences(base, figures.shapes(run))) for run in runs]
    chosen, cell.differences = next((found for found in differing if not found[1]), differing[0])
    return chosen


def _headline(cell: Cell, chosen: dict[str, Any], base_run: dict[str, Any] | None, is_base: bool) -> None:
    """The cell's figure and verdict against the baseline's run."""
    cell.numerics = figures.numerics(chosen)
    # On the CPU there is no accelerator to leave: one answer for the board, its checklist and the site.
    cell.stayed = "n/a" if cell.backend == "cpu" else figures.stayed(chosen)
    if is_base or base_run is None:
        cell.figure = figures.headline(chosen)
        cell.verdict = "baseline" if is_base else "no baseline figure"
        return
    name = next((n for n in figures.HEADLINES if figures.headline(base_run, n) and figures.headline(chosen, n)), None)
    cell.figure = figures.headline(chosen, name) if name else figures.headline(chosen)
    base = figures.headline(base_run, name) if name else None
    if base is None or cell.figure is None:
        cell.verdict = "no common figure with the baseline"
        return
    if cell.differences:
        cell.verdict = "not comparable: " + ", ".join(cell.differences)
        return
    if name == "step_s" and base.devices != cell.figure.devices:
        cell.verdict = f"not comparable: {base.devices} vs {cell.figure.devices} devices, no throughput to normalise"
        return
    if not base.value or not cell.figure.value:
        cell.verdict = "a zero figure"
        return
    faster = cell.figure.value / base.value if name in figures.THROUGHPUT else base.value / cell.figure.value
    cell.ratio = round(faster, 4)
    if base.devices != cell.figure.devices:
        cell.differences.append(f"per device: {base.devices} vs {cell.figure.devices} devices")
    if cell.numerics == "passed":
        cell.speedup, cell.verdict = cell.ratio, "counted"
    elif cell.numerics == "failed":
        cell.speedup, cell.verdict = 0.0, "numerics failed"
    else:
        cell.verdict = "unchecked"


def _why_empty(cell: Cell) -> str:
    if cell.tried == 0:
        return "only reported figures"
    if cell.completed == 0:
        return f"only failed runs ({cell.tried})"
    return "no figure recorded in its completed runs"


def _best(cells: list[Cell], base: str | None) -> str:
    if base is None:
        notes = {cell.note for cell in cells}
        return "none yet; " + (notes.pop() if len(notes) == 1 else "no completed, measured run with a figure")
    counted = [c for c in cells if c.speedup]
    backends = {c.backend for c in cells}
    only = f"; only {next(iter(backends))} so far" if len(backends) == 1 else ""
    if not counted:
        faster = [c for c in cells if c.ratio and c.ratio > 1]
        if faster:
            top = max(faster, key=lambda c: c.ratio or 0)
            fastest = f"fastest: {top.label} ×{top.ratio:.3g}, {top.verdict}"
            return f"nothing beats {base} with numerics checked ({fastest}){only}"
        return f"{base} (the baseline) is fastest{only}"
    top = max(counted, key=lambda c: c.speedup or 0)
    if (top.speedup or 0) <= 1:
        return f"{base} (the baseline) is fastest{only}"
    return f"{top.label}: ×{top.speedup:.3g} over {base}, numerics passed{only}"


def checklist(
    cell: Cell, run: dict[str, Any] | None, coverage: dict[str, Any] | None, latest: LatestRelease
) -> list[Check]:
    """The questions to ask of a result before believing it, answered from the cell's picked run."""
    if run is None:
        missing = "no completed, measured run: " + (cell.note or "record one with kb record")
        return [Check(q, False, None, missing) for q in QUESTIONS]
    rid = str(run.get("id"))
    timings = run.get("timings") or {}
    checks = [
        _yes(QUESTIONS[0], bool(run.get("versions")) and bool(run.get("settings")), rid,
             "", "record with kb record and give --setting batch=..., dtype=..."),
        _yes(QUESTIONS[1], isinstance(timings.get("step_s"), dict) and any(k in timings for k in figures.ONE_OFF[1:]),
             rid, "",
             "time steps with ingest.pytorch.run (r.step) so compile and warm-up stay out of the steady state"),
        _compile_check(cell),
        _stayed_check(cell, rid),
        _numerics_check(cell, rid),
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


def _numerics_check(cell: Cell, entry: str) -> Check:
    question = QUESTIONS[4]
    if cell.numerics == "passed":
        return Check(question, True, entry)
    if cell.numerics == "failed":
        return Check(question, False, entry, "numerics failed: its speed-up counts as zero")
    return Check(question, False, None, "check outputs against a reference: r.check_numerics(outputs, reference)")


def _adaptations_check(found: dict[str, Any]) -> Check:
    if "adaptations" not in found:
        return Check(
            QUESTIONS[5], False, None, "say what had to change to make it run (adaptations), or that nothing did"
        )
    count = found["adaptations"]  # the index keeps their count
    return Check(QUESTIONS[5], True, str(found.get("id")), f"{count} adaptation{'s' if count != 1 else ''}")


def _coverage_check(cell: Cell, coverage: dict[str, Any] | None) -> Check:
    if not coverage:
        todo = f"kb ingest junit results.xml --workload {cell.workload} --backend {cell.backend}"
        return Check(QUESTIONS[6], False, None, todo)
    totals = coverage.get("coverage") or {}
    found = f"{totals.get('passed', '?')} passed, {totals.get('skipped', '?')} skipped of {totals.get('total', '?')}"
    return Check(QUESTIONS[6], True, str(coverage.get("id")), found)


def _release_check(cell: Cell, run: dict[str, Any], newest: LatestRelease) -> Check:
    from kb.index.query import version_key

    packages = BACKEND_PACKAGES.get(cell.backend, (cell.backend,))
    latest = newest(packages)
    if latest is None:
        return Check(QUESTIONS[7], None, None, f"no release of {' or '.join(packages)} recorded (kb release)")
    versions = {k.lower().replace("_", "-"): v for k, v in (run.get("versions") or {}).items()}
    used = versions.get(latest["package"])
    if used is not None:
        newer = version_key(figures.release_of(str(used))) >= version_key(figures.release_of(str(latest["version"])))
        found = f"ran on {latest['package']} {used}; latest release {latest['version']}"
    else:
        newer = str(run.get("recorded") or "") > str(latest["recorded"])
        found = f"recorded after {latest['package']} {latest['version']} was" if newer else ""
    if newer:
        return Check(QUESTIONS[7], True, str(run.get("id")), found)
    todo = f"{latest['package']} {latest['version']} ({latest['id']}) is newer than the evidence: run it again"
    return Check(QUESTIONS[7], False, latest["id"], todo)
