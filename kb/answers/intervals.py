"""The verdicts' bootstrap intervals, kept in the index between calls.

An interval is a pure function of the runs it resamples (kb.answers.verdict: a fixed seed), so the board, which
judges the same runs on every call, keeps each one under a digest of its inputs and of the scipy that computed it.
Computing one needs scipy.stats, whose import alone took longer than the rest of a 100,000-entry board.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
from functools import cache
from pathlib import Path

from kb.answers import verdict
from kb.index import answers


class Intervals:
    """verdict.judge's `bootstrap`: an interval kept in the index, else computed and kept by `save`."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.known = answers.stored_intervals(db)
        self.new: dict[str, tuple[float, float]] = {}

    def __call__(self, base: list[float], other: list[float], higher_is_better: bool) -> tuple[float, float]:
        key = digest(base, other, higher_is_better)
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = self.new[key] = verdict.interval(base, other, higher_is_better)
        return found

    def save(self) -> None:
        """Keep the intervals computed by this object (where the index can take them now: see store_intervals)."""
        if self.new and answers.store_intervals(self.db, self.new):
            self.new = {}


def digest(base: list[float], other: list[float], higher_is_better: bool) -> str:
    """What an interval depends on: both samples in order (the resampling draws by position), the direction, the
    bootstrap's settings and scipy's release."""
    inputs = (base, other, higher_is_better, verdict.RESAMPLES, verdict.CONFIDENCE, verdict.SEED, _scipy())
    return hashlib.sha256(repr(inputs).encode()).hexdigest()


@cache
def _scipy() -> str:
    """scipy's version file, read without importing scipy (the import is what keeping intervals saves)."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None:
        return ""
    try:
        return (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
