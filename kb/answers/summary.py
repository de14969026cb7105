"""One screen per backend and mode across all workloads, the view PyTorch's compiler dashboard gives: the pass
rate, the geometric mean of the speed-ups over the incumbent where numerics passed (with its interval over the
workloads), the median cold and warm compile (where no run is tagged either, the untagged one with its cache), the
median peak memory, how many workloads are due a rerun (their evidence older than the backend's newest
release, or failed on it), and how that summary moved across the releases of the backend's package. Read off the
board (the same cells, the same rules, the same peak memory); the releases from the cells' runs.

A release's line: the runs of every workload on that release, completed of tried, and the geometric mean over
the workloads of the speed-up of their comparable runs on it (completed, measured, off a busy machine, numerics
passed, timed on the device, the baseline's shapes) over the baseline's figure on the board now: one yardstick
for every release, so the lines show the backend moving, not the baseline.
"""

from __future__ import annotations

import sqlite3
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from kb.answers import figures, verdict
from kb.answers.board import NO_BACKEND, QUESTIONS, Board, Cell, backend_package
from kb.answers.changepoints import release_in
from kb.answers.verdict import CONFIDENCE, MIN_RUNS, RESAMPLES, SEED
from kb.index import answers

CURRENT = QUESTIONS[7]  # the checklist's "evidence newer than the latest release"


@dataclass
class ReleaseSummary:
    """The backend and mode on one release of its package, across the workloads."""

    release: str  # "torch-neuronx 2.26.0"
    completed: int  # runs completed on it, of
    tried: int
    counted: int  # workloads whose speed-up on it counted
    geomean: float | None
    low: float | None
    high: float | None


@dataclass
class BackendSummary:
    label: str  # backend · mode
    workloads: int  # workloads with a run of it
    completed: int  # runs completed, of
    tried: int
    counted: int  # workloads whose speed-up over the baseline counted (numerics passed, comparable)
    geomean: float | None  # of those speed-ups
    low: float | None  # its interval over the workloads (from MIN_RUNS workloads)
    high: float | None
    cold_compile_s: float | None  # the median over workloads of each cell's newest cold compile
    warm_compile_s: float | None
    releases: list[str]  # the backend package releases its cells' figures come from, oldest first
    peak_memory_gb: float | None = None  # the median over workloads of each cell's peak memory (the board's)
    memory_workloads: int = 0  # the workloads with a peak recorded
    rerun_due: int = 0  # workloads whose evidence is older than the newest release, or failed on it
    other_compile_s: float | None = None  # the median over the workloads whose compile is neither cold nor warm
    other_compile_cache: str | None = None  # their runs' cache state (`hit`, `unknown` ...), or `mixed` if they differ
    history: list[ReleaseSummary] = field(default_factory=list)  # per release of the package, oldest first


@dataclass
class Summary:
    rows: list[BackendSummary]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summary(board: Board, db: sqlite3.Connection) -> Summary:
    cells: dict[str, list[Cell]] = {}
    for workload in board.workloads:
        for cell in workload.cells:
            if cell.tried:
                cells.setdefault(cell.label, []).append(cell)
    runs: dict[tuple[str, str, str | None], list[dict[str, Any]]] = {}
    for name in sorted({workload.workload for workload in board.workloads}):
        for row in answers.workload_evidence(db, name):
            if row["kind"] == "run":
                runs.setdefault((row["workload"], row["backend"] or NO_BACKEND, row["mode"]), []).append(row)
    rows = []
    for label, found in sorted(cells.items()):
        row = _row(label, found)
        peaks = [cell.peak_memory_gb for cell in found if cell.peak_memory_gb is not None]
        row.peak_memory_gb = round(statistics.median(peaks), 3) if peaks else None
        row.memory_workloads = len(peaks)
        row.history = _history(found, board, runs)
        rows.append(row)
    return Summary(rows)


def _row(label: str, cells: list[Cell]) -> BackendSummary:
    speedups = [c.speedup for c in cells if c.verdict == "counted" and c.speedup]
    geomean, low, high = _geomean(speedups)
    cold = [c.cold_compile["seconds"] for c in cells if c.cold_compile]
    warm = [c.warm_compile["seconds"] for c in cells if c.warm_compile]
    # The compile the board shows for a cell whose runs are tagged neither cold nor warm.
    others = [c.other_compile for c in cells if c.other_compile and not (c.cold_compile or c.warm_compile)]
    caches = {other["cache"] for other in others}
    due = sum(1 for c in cells if any(check.question == CURRENT and check.ok is False for check in c.checklist))
    return BackendSummary(
        label, len(cells), sum(c.completed for c in cells), sum(c.tried for c in cells), len(speedups),
        geomean, low, high, statistics.median(cold) if cold else None, statistics.median(warm) if warm else None,
        _ordered({c.release for c in cells if c.release}), rerun_due=due,
        other_compile_s=statistics.median([other["seconds"] for other in others]) if others else None,
        other_compile_cache=(caches.pop() if len(caches) == 1 else "mixed") if others else None,
    )  # fmt: skip


def _key(cell: Cell) -> tuple[str, str, str | None]:
    return cell.workload, cell.backend, cell.mode


def _release(row: dict[str, Any], package: str | None) -> str | None:
    """`torch-neuronx 2.27.1`: the run's release of the package, as the board names a cell's."""
    release = release_in(row["data"], package) if package else None
    return f"{package} {release}" if release else None


def _history(
    cells: list[Cell], board: Board, runs: dict[tuple[str, str, str | None], list[dict[str, Any]]]
) -> list[ReleaseSummary]:
    """Per release of the backend's package: the runs completed of tried and the geomean speed-up on it."""
    tried: dict[str, list[dict[str, Any]]] = {}
    speedups: dict[str, list[float]] = {}
    for cell in cells:
        found = runs.get(_key(cell), [])
        package = backend_package(cell.backend, found)
        by_release: dict[str, list[dict[str, Any]]] = {}
        for row in found:
            release = _release(row, package)
            if release:
                by_release.setdefault(release, []).append(row)
                tried.setdefault(release, []).append(row)
        yardstick = _yardstick(cell, board, runs)
        for release, rows in by_release.items():
            ratio = _speedup(rows, yardstick) if yardstick else None
            if ratio:
                speedups.setdefault(release, []).append(ratio)
    history = []
    for release in _ordered(set(tried)):
        geomean, low, high = _geomean(speedups.get(release, []))
        rows = tried[release]
        completed = sum(1 for row in rows if row["status"] == "completed")
        history.append(ReleaseSummary(release, completed, len(rows), len(speedups.get(release, [])), geomean, low,
                                      high))  # fmt: skip
    return history


def _yardstick(cell: Cell, board: Board, runs: dict[tuple[str, str, str | None], list[dict[str, Any]]]) -> Any:
    """(figure name, the baseline's figure, its run's shapes and device count) of the cell's workload; None where
    the cell is the baseline, or the workload has none."""
    workload = next(w for w in board.workloads if w.workload == cell.workload)
    base = next((c for c in workload.cells if c.label == workload.baseline), None)
    if base is None or base is cell or base.figure is None or base.launch_times:
        return None
    newest = next((row for row in runs.get(_key(base), []) if row["id"] == base.figure.entry), None)
    if newest is None:
        return None
    return base.figure.name, base.figure.value, figures.shapes(newest["data"]), figures.devices(newest["data"])


def _speedup(rows: list[dict[str, Any]], yardstick: tuple[str, float, dict[str, Any], int]) -> float | None:
    """The speed-up over the baseline's figure of one release's comparable, numerics-passed runs (newest first):
    the repeats of the newest one's configuration (figures.configuration), as the board pools a cell's."""
    name, base_value, shapes, devices = yardstick
    comparable = []
    for row in rows:
        data = row["data"]
        figure = figures.headline(data, name)
        if (row["status"] != "completed" or row["source"] == "reported" or figure is None or figures.busy(data)
                or figures.numerics(data) != "passed" or figures.launch_times(data)
                or figures.shape_differences(shapes, figures.shapes(data))
                or (name == "step_s" and figures.devices(data) != devices)):  # fmt: skip
            continue
        comparable.append((figures.configuration(data), figure.value))
    if not comparable:
        return None
    values = [value for setup, value in comparable if setup == comparable[0][0]]
    return verdict.judge([base_value], values, higher_is_better=name in figures.THROUGHPUT).ratio


def _ordered(releases: set[str]) -> list[str]:
    """`torch 2.9.0` before `torch 2.10.0`: by package, then PEP 440."""
    from kb.index.query import version_key

    return sorted(releases, key=lambda r: (r.partition(" ")[0], version_key(r.partition(" ")[2])))


def _geomean(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """The geometric mean of the speed-ups, and a bootstrap interval of it over the workloads."""
    if not values:
        return None, None, None
    import warnings

    import numpy as np
    from scipy import stats

    point = round(float(stats.gmean(values)), 4)
    if len(values) < MIN_RUNS:
        return point, None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identical speed-ups leave nothing to resample: the interval is the point
        found = stats.bootstrap((np.asarray(values),), stats.gmean, n_resamples=RESAMPLES, method="percentile",
                                confidence_level=CONFIDENCE, rng=np.random.default_rng(SEED))  # fmt: skip
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    return point, round(low, 4) if np.isfinite(low) else point, round(high, 4) if np.isfinite(high) else point
