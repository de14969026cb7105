"""One screen per backend and mode across all workloads, the view PyTorch's compiler dashboard gives: the pass
rate, the geometric mean of the speed-ups over the incumbent where numerics passed (with its interval over the
workloads), the median cold and warm compile and peak memory, and how many workloads are due a rerun (their
evidence older than the backend's newest release, or failed on it). Read off the board: the same cells, the same
rules."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from kb.answers.board import QUESTIONS, Board, Cell
from kb.answers.verdict import CONFIDENCE, MIN_RUNS, RESAMPLES, SEED

CURRENT = QUESTIONS[7]  # the checklist's "evidence newer than the latest release"


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
    peak_memory_gb: float | None  # the median over workloads of each cell's peak memory
    rerun_due: int  # workloads whose evidence is older than the newest release, or failed on it
    releases: list[str]  # the backend package releases its cells' figures come from, oldest first


@dataclass
class Summary:
    rows: list[BackendSummary]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summary(board: Board) -> Summary:
    cells: dict[str, list[Cell]] = {}
    for workload in board.workloads:
        for cell in workload.cells:
            if cell.tried:
                cells.setdefault(cell.label, []).append(cell)
    return Summary([_row(label, found) for label, found in sorted(cells.items())])


def _row(label: str, cells: list[Cell]) -> BackendSummary:
    speedups = [c.speedup for c in cells if c.verdict == "counted" and c.speedup]
    geomean, low, high = _geomean(speedups)
    cold = [c.cold_compile["seconds"] for c in cells if c.cold_compile]
    warm = [c.warm_compile["seconds"] for c in cells if c.warm_compile]
    peaks = [c.peak_memory_gb for c in cells if c.peak_memory_gb is not None]
    due = sum(1 for c in cells if any(check.question == CURRENT and check.ok is False for check in c.checklist))
    return BackendSummary(
        label, len(cells), sum(c.completed for c in cells), sum(c.tried for c in cells), len(speedups),
        geomean, low, high, statistics.median(cold) if cold else None, statistics.median(warm) if warm else None,
        statistics.median(peaks) if peaks else None, due, _ordered({c.release for c in cells if c.release}),
    )  # fmt: skip


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
