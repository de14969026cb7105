"""One rule for every comparison kb prints: faster, slower, equivalent within the floor, or inconclusive.

The unit of evidence is a set of repeated runs. Two sets are compared by the ratio of their medians ("how many
times faster"), with a bootstrap confidence interval of that ratio (scipy.stats.bootstrap, percentile method,
a fixed seed so that the same runs always give the same answer). The floor is the smallest change that matters
in practice (2% unless kb.toml's [answers] floor says otherwise):

- faster: the whole interval lies above 1 + floor;
- slower: the whole interval lies below 1 - floor;
- equivalent: the whole interval lies within 1 ± floor;
- inconclusive: fewer than MIN_RUNS runs on either side, or the interval straddles the floor.

board, compare, trend, expect and revisit all call `judge`; none judges noise its own way.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

FLOOR = 0.02  # default practical floor: a change smaller than 2% is no change worth a decision
MIN_RUNS = 3  # per side: fewer runs give no interval worth printing
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261206  # fixed: the same runs give the same interval on every machine and every call
VERDICTS = ("faster", "slower", "equivalent", "inconclusive")
# (base, other, higher_is_better) -> the interval of the ratio: `interval` below, or one kept between calls
Bootstrap = Callable[[list[float], list[float], bool], "tuple[float, float]"]


@dataclass(frozen=True)
class Verdict:
    """How the candidate's runs compare with the baseline's: `ratio` is how many times faster (above 1: faster)."""

    verdict: str  # one of VERDICTS
    ratio: float | None  # of the medians, oriented so that above 1 is better
    low: float | None  # the interval of the ratio, None with too few runs
    high: float | None
    n_base: int
    n: int
    floor: float
    reason: str = ""  # why inconclusive, when it is

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def footing(self) -> str:
        """`n=5 vs 5, floor 2%` and the interval where there is one."""
        interval = f", 95% interval ×{self.low:.3g} to ×{self.high:.3g}" if self.low is not None else ""
        return f"n={self.n} vs {self.n_base}{interval}, floor {self.floor:.0%}"

    def text(self) -> str:
        """The verdict, its ratio and its footing, as one phrase: `faster x1.51 (n=5 vs 5, ...)`."""
        ratio = f" ×{self.ratio:.3g}" if self.ratio is not None else ""
        word = "equivalent within the floor" if self.verdict == "equivalent" else self.verdict
        why = f"; {self.reason}" if self.reason else ""
        return f"{word}{ratio} ({self.footing}{why})"


def finite(values: list[float]) -> list[float]:
    """The values that are numbers: a NaN or infinite figure is never evidence of speed."""
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]


def judge(
    base: list[float],
    other: list[float],
    *,
    higher_is_better: bool,
    floor: float = FLOOR,
    bootstrap: Bootstrap | None = None,
) -> Verdict:
    """The verdict on `other` against `base` (each one figure per run); `bootstrap` gives the interval (default
    `interval`; kb.answers.intervals keeps them in the index)."""
    base, other = finite(base), finite(other)
    if not base or not other:
        return Verdict("inconclusive", None, None, None, len(base), len(other), floor, "no figure on one side")
    ratio = _ratio(statistics.median(base), statistics.median(other), higher_is_better)
    if ratio is None:
        return Verdict("inconclusive", None, None, None, len(base), len(other), floor, "a zero figure")
    if len(base) < MIN_RUNS or len(other) < MIN_RUNS:
        reason = f"too few runs: {MIN_RUNS} on each side give an interval"
        return Verdict("inconclusive", ratio, None, None, len(base), len(other), floor, reason)
    low, high = (bootstrap or interval)(base, other, higher_is_better)
    if low > 1 + floor:
        word, reason = "faster", ""
    elif high < 1 - floor:
        word, reason = "slower", ""
    elif low >= 1 - floor and high <= 1 + floor:
        word, reason = "equivalent", ""
    else:
        word, reason = "inconclusive", "the interval straddles the floor"
    return Verdict(word, ratio, low, high, len(base), len(other), floor, reason)


def _ratio(base: float, other: float, higher_is_better: bool) -> float | None:
    if not base or not other:
        return None
    return round(other / base if higher_is_better else base / other, 4)


def interval(base: list[float], other: list[float], higher_is_better: bool) -> tuple[float, float]:
    """The bootstrap confidence interval of the ratio of medians (resampling each side apart)."""
    import warnings

    import numpy as np
    from scipy import stats

    def ratio(b: np.ndarray, o: np.ndarray, axis: int = -1) -> np.ndarray:
        mb, mo = np.median(b, axis=axis), np.median(o, axis=axis)
        return mo / mb if higher_is_better else mb / mo

    with warnings.catch_warnings():
        # Identical runs leave nothing to resample: scipy warns and the interval is the one value, which is right.
        warnings.simplefilter("ignore")
        found = stats.bootstrap(
            (np.asarray(base), np.asarray(other)), ratio, vectorized=True, paired=False, n_resamples=RESAMPLES,
            confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(SEED),
        )  # fmt: skip
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        point = ratio(np.asarray(base), np.asarray(other))
        low = high = float(point)
    return round(low, 4), round(high, 4)


def spread(values: list[float]) -> tuple[float, float] | None:
    """The lowest and highest of the runs' figures (all of them: with a handful of runs, percentiles hide one)."""
    found = finite(values)
    return (min(found), max(found)) if found else None
