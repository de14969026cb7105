"""Where a series of runs changed across releases: E-Divisive means with a t-test, as Apache Otava (formerly
Hunter) locates performance changes.

The method (Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance Regressions", ICPE 2023,
https://doi.org/10.1145/3578244.3583719, built on Matteson and James, "A Nonparametric Approach for Multiple
Change Point Analysis of Multivariate Data", https://doi.org/10.48550/arXiv.1306.4933):

1. Split: within each stretch between the change points found so far, the candidate is the split tau, with the
   end kappa of its right-hand side, that maximises the energy statistic Q(tau, kappa) (how far apart the two
   sides' distributions are, against the spread within each); it is kept while a two-sided t-test between the
   two sides E-Divisive found (start to tau, tau to kappa) is significant (p below ten times the final threshold:
   these are the "weak" change points). The sums of distances Q reads take memory in proportion to the series'
   length, never its square (`_Sums`). Otava tests start to tau against tau to the stretch's end and finds
   local changes by sliding windows of 50 points over a long series of one point per commit; kb's series are
   tens of runs, where that test would let a change the next release undid hide the change itself.
2. Merge: the weakest change point (highest p, or below the significance threshold the smallest relative change)
   is dropped while its p is not below the threshold or its change is within the practical floor, and its
   neighbours are tested again against their new stretches.

kb's series are the runs of one program (workload, backend, mode, shapes, device count, hardware, how it was
timed) ordered by release and then by time, and a change can only fall between two releases: runs of one release
are repeats. Each change point left is then judged by kb's one verdict rule (kb.answers.verdict: the bootstrap
interval of the ratio of medians against the floor) between the runs of the stretches on either side (`located`,
which kb trend reads too); only a verdict of faster or slower is a change.

Runs left out: any that did not complete (a failed run has no figure; what stopped working is
kb.answers.regressions' job), runs on a busy machine, reported figures, and launch times (nothing waited for the
device): how long work took to queue is never ranked, not against device times nor against other launch times.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from kb.answers import figures, verdict
from kb.index.query import version_key

MAX_PVALUE = 0.001  # Otava's default: a change point must be this unlikely under "no change"
FIRST_PASS = 10  # the split step keeps candidates at ten times the threshold, as Otava does


@dataclass
class Run:
    """One completed run's figure in a series."""

    id: str
    release: str  # of the backend's package, local labels folded
    recorded: str
    value: float
    hardware: str  # what it ran on, as people read it (hardware_label)


@dataclass
class Change:
    """Where a series changed: the last release before the change and the first after it, by how much."""

    workload: str
    series: str  # backend · mode, and whatever else makes it another program, bar its hardware
    figure: str
    package: str
    last_good: str  # the last release before the change
    first_bad: str  # the first release after it (for an improvement, the first better one)
    verdict: str  # faster or slower (kb.answers.verdict)
    change: float  # of the median after against the median before, as a fraction
    pvalue: float  # of the t-test between the two stretches
    comparison: dict[str, Any]  # kb.answers.verdict.Verdict: ratio, interval, n, floor
    before: list[str] = field(default_factory=list)  # the runs of the stretch before, oldest first
    after: list[str] = field(default_factory=list)
    hardware: str = ""  # `on EPYC (2 threads)` where another series differs from this one in hardware alone

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def label(self) -> str:
        """The series as kb trend labels it: its hardware said where that alone tells it from another."""
        return " · ".join(part for part in (self.series, self.hardware) if part)


def series_of(rows: list[dict[str, Any]], package: str) -> dict[tuple[Any, ...], list[Run]]:
    """The series of one workload and backend's evidence rows (kb.index.answers.workload_evidence, any order):
    key -> runs in release order, then time order. The key: (series label, figure, higher is better, hardware):
    runs on other hardware are no repeats of each other (figures.machine)."""
    found: dict[tuple[Any, ...], list[Run]] = {}
    for row in rows:
        data = row["data"]
        if row["kind"] != "run" or row["status"] != "completed" or row["source"] == "reported" or figures.busy(data):
            continue
        release, figure = release_in(data, package), figures.headline(data)
        if release is None or figure is None or (figures.launch_times(data) and figures.device_timed(figure.name)):
            continue  # launch times are never ranked (figures.LAUNCH_TIMES), not even against launch times
        key = (series_label(row["backend"], row["mode"], data), figure.name, figure.name in figures.THROUGHPUT,
               hardware(data))  # fmt: skip
        found.setdefault(key, []).append(Run(row["id"], release, row["recorded"], figure.value, hardware_label(data)))
    for runs in found.values():
        runs.sort(key=lambda run: (version_key(run.release), run.recorded, run.id))
    return found


def release_in(data: dict[str, Any], package: str) -> str | None:
    """The release of `package` a run used (local labels folded), None where it names none."""
    from kb.index.rows import normalise_package

    for name, version in (data.get("versions") or {}).items():
        if normalise_package(str(name)) == package:
            return figures.release_of(str(version))
    return None


def hardware(data: dict[str, Any]) -> str:
    """The hardware a run's figures belong to (figures.machine), as a key that sorts."""
    return repr(figures.machine(data))


def hardware_label(data: dict[str, Any]) -> str:
    """`on NVIDIA H100` (a run's accelerators), else its CPU and threads: what tells apart series that differ in
    hardware alone (figures.machine)."""
    names, cpu, threads = figures.machine(data)
    if names:
        return "on " + ", ".join(names)
    return "on " + (str(cpu) if cpu else "unknown hardware") + (f" ({threads} threads)" if threads else "")


def series_label(backend: str | None, mode: str | None, data: dict[str, Any], *, device_timed: bool = True) -> str:
    """What makes a run's figures a program of their own, bar its hardware: backend · mode, device count, every
    shape setting, and launch times where the figure was timed around device work (figures.device_timed)."""
    parts = [backend or "?", *([mode] if mode else [])]
    count = figures.devices(data)
    if count > 1:
        parts.append(f"{count} devices")
    shapes = figures.shapes(data)
    parts += [f"{name}={shapes[name]}" for name in sorted(shapes) if name not in figures.DEVICE_SETTINGS]
    if device_timed and figures.launch_times(data):
        parts.append("launch times")
    return " · ".join(parts)


def changes(workload: str, package: str, rows: list[dict[str, Any]], floor: float = verdict.FLOOR) -> list[Change]:
    """Every change beyond the floor in the series of one workload's runs on one backend package."""
    found = []
    series = series_of(rows, package)
    machines = Counter((label, figure) for label, figure, *_ in series)
    for (label, figure, higher, _), runs in sorted(series.items()):
        hardware = runs[0].hardware if machines[label, figure] > 1 else ""
        values = [run.value for run in runs]
        for change in located(values, [run.release for run in runs], higher_is_better=higher, floor=floor):
            if change.judged.verdict not in ("faster", "slower"):
                continue
            before, after = runs[change.start : change.point], runs[change.point : change.stop]
            found.append(Change(
                workload, label, figure, package, before[-1].release, after[0].release, change.judged.verdict,
                change.change, change.pvalue, change.judged.as_dict(), [r.id for r in before], [r.id for r in after],
                hardware,
            ))  # fmt: skip
    return found


@dataclass
class Located:
    """A change point of a series and its verdict: values[start:point] before it, values[point:stop] after."""

    start: int
    point: int
    stop: int
    judged: verdict.Verdict  # the stretch after against the stretch before, by the one verdict rule
    change: float  # of the median after against the median before, as a fraction
    pvalue: float  # of the t-test between the two stretches


def located(values: list[float], releases: list[str], *, higher_is_better: bool, floor: float) -> list[Located]:
    """Every change point of one series (values in release order, then time order; `releases` beside them), each
    judged between the stretches either side of it. Only a verdict of faster or slower is a change."""
    boundaries = [i for i in range(1, len(values)) if releases[i] != releases[i - 1]]
    edges = [0, *locate(values, boundaries, floor=floor), len(values)]
    found = []
    for start, point, stop in zip(edges, edges[1:], edges[2:], strict=False):
        before, after = values[start:point], values[point:stop]
        judged = verdict.judge(before, after, higher_is_better=higher_is_better, floor=floor)
        old, new = statistics.median(before), statistics.median(after)
        change = round((new - old) / abs(old), 4) if old else 0.0
        found.append(Located(start, point, stop, judged, change, _test(before, after)))
    return found


def locate(
    values: list[float], boundaries: list[int], *, floor: float = 0.0, max_pvalue: float = MAX_PVALUE
) -> list[int]:
    """The indices where the series changes (each the first value after a change), chosen among `boundaries`:
    the split step, then the merge step (module docstring)."""
    if len(boundaries) == 0 or len(values) < 3:
        return []
    import numpy as np

    sums = _Sums(np.asarray(values, dtype=float))
    allowed = np.asarray(boundaries)
    points: list[int] = []
    while True:  # split: the best candidate of all stretches, while significant at the first-pass threshold
        edges = [0, *points, len(values)]
        best = None
        for start, stop in itertools.pairwise(edges):
            found = _candidate(sums, start, stop, allowed)
            if found is not None and (best is None or found[2] > best[2]):
                best = (start, *found)
        if best is None:
            break
        start, point, end, _ = best
        if not _test(values[start:point], values[point:end]) < max_pvalue * FIRST_PASS:
            break
        points = sorted([*points, point])
    while points:  # merge: drop the weakest until every one left is significant and beyond the floor
        edges = [0, *points, len(values)]
        stats = [(_test(values[a:p], values[p:b]), _magnitude(values[a:p], values[p:b]))
                 for a, p, b in zip(edges, edges[1:], edges[2:], strict=False)]  # fmt: skip
        weakest = max(range(len(points)), key=lambda i: stats[i][0])
        if stats[weakest][0] < max_pvalue:
            weakest = min(range(len(points)), key=lambda i: stats[i][1])
            if stats[weakest][1] > floor:
                break
        del points[weakest]
    return points


BLOCK = 1 << 18  # cells of the (split, end) grid worked at once: memory bounded, however long the series


class _Sums:
    """Sums of the distances |x_i - x_j| between runs of one series, as the energy statistic reads them, without
    the n-by-n matrix of distances (a series of thousands of runs would need gigabytes): within(a, b) is the sum over
    the pairs i < j of values[a:b], from the prefix sums of each run's distances to the runs before it and of one
    start's distances to every run (sorted values and their running sums: O(n log n) time, O(n) memory)."""

    def __init__(self, values: Any) -> None:
        import numpy as np

        self.values = values
        before = np.zeros(len(values))  # each run's distances to the runs before it, a block of runs at a time
        step = max(1, BLOCK // max(1, len(values)))
        for first in range(0, len(values), step):
            block = values[first : first + step]
            inside = np.tril(np.abs(block[:, None] - block[None, :])).sum(axis=1)
            before[first : first + step] = _distance_sums(values[:first], block) + inside
        self.head = np.concatenate(([0.0], np.cumsum(before)))  # head[b] = within(0, b)

    def from_start(self, a: int) -> Any:
        """within(a, b) for every b from 0 to n (meaningful for b >= a): within(0, b) less within(0, a) and the
        pairs with one run before a and one from a on."""
        import numpy as np

        crossing = np.concatenate(([0.0], np.cumsum(_distance_sums(self.values[:a], self.values))))
        return self.head - self.head[a] - (crossing - crossing[a])


def _distance_sums(sources: Any, targets: Any) -> Any:
    """For each target t, the sum of |s - t| over the sources: from the sorted sources and their running sums."""
    import numpy as np

    ordered = np.sort(sources)
    running = np.concatenate(([0.0], np.cumsum(ordered)))
    below = np.searchsorted(ordered, targets)
    return targets * below - running[below] + (running[-1] - running[below]) - targets * (len(ordered) - below)


def _candidate(sums: _Sums, start: int, stop: int, allowed: Any) -> tuple[int, int, float] | None:
    """(tau, kappa, Q): the split tau of values[start:stop] among the allowed ones, and the end kappa of its
    right-hand side, that maximise Q(tau, kappa) (Matteson and James' energy statistic, from the sums of the
    distances within each side and between them); worked a block of splits at a time, the first maximum kept."""
    import numpy as np

    taus = allowed[(allowed > start) & (allowed < stop)]
    if taus.size == 0:
        return None
    kappas = np.arange(start + 1, stop + 1)
    whole = sums.from_start(start)  # within(start, b)
    best: tuple[int, int, float] | None = None
    step = max(1, BLOCK // kappas.size)
    for first in range(0, taus.size, step):
        tau = taus[first : first + step, None]
        right = np.stack([sums.from_start(int(t))[kappas] for t in tau[:, 0]])  # within(tau, kappa)
        n, m = tau - start, kappas[None, :] - tau
        within_left = whole[tau]
        between = whole[kappas][None, :] - within_left - right
        with np.errstate(divide="ignore", invalid="ignore"):
            left = np.where(n > 1, 2 * m * within_left / ((m + n) * (n - 1)), 0.0)
            right = np.where(m > 1, 2 * n * right / ((m + n) * (m - 1)), 0.0)
            q = np.where(m > 0, 2 * between / (m + n) - left - right, -np.inf)
        i, j = np.unravel_index(np.argmax(q), q.shape)
        if best is None or q[i, j] > best[2]:
            best = int(tau[i, 0]), int(kappas[j]), float(q[i, j])
    return best


def _test(left: list[float], right: list[float]) -> float:
    """The two-sided t-test's p between two stretches (1 where it cannot say: a side of one run and no spread)."""
    import warnings

    from scipy import stats

    if len(left) + len(right) <= 2:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant sides: scipy warns and answers p=0 or NaN, read below
        p = float(stats.ttest_ind(left, right).pvalue)
    return p if math.isfinite(p) else 1.0


def _magnitude(left: list[float], right: list[float]) -> float:
    """The larger relative change of the means, either way round (Otava's magnitude)."""
    a, b = statistics.fmean(left), statistics.fmean(right)
    if not a or not b:
        return 0.0
    return max(abs(b / a - 1), abs(a / b - 1))
