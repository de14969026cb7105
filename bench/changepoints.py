"""The change-point pass over a whole knowledge base: `kb board --regressions` in process, on generated bases.

On a generated knowledge base (bench.generate, seed 1) of each size, indexed: the whole regressions answer
(what stopped working, and where each series changed across releases: kb.answers.changepoints), against
reading the evidence it judges (every run's front matter from the index) in the same run: the ratio is what
locating the changes costs over the read it cannot avoid. Also the number of series, runs and changes found.

And the memory of locating the changes in one series of 6,000 runs (a release every 20 runs, 30% slower from the
4,000th): the peak Python and numpy allocate (tracemalloc) for kb.answers.changepoints.locate, against the n-by-n
matrix of distances and its prefix sums that locating them from a matrix needs, measured in the same run.

    python -m bench.changepoints [SIZE ...]      (default 3000 10000; `python -m bench` runs 10000 and 100000)
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from bench.timing import machine


def run(sizes: tuple[int, ...], repeats: int) -> dict[str, float]:
    from bench.generate import generate
    from kb.index.sync import sync

    figures: dict[str, float] = {}
    print(f"\nchange points across releases; {machine()}")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kb-bench-changepoints-") as folder:
            kb = generate(Path(folder) / "kb", size, seed=1)
            sync(kb, rebuild=True)
            figures |= _measure(kb, size, repeats)
    return figures | _memory(6_000)


def _memory(length: int) -> dict[str, float]:
    """Peak memory of locating the change in one long series, against the matrix of its distances."""
    import numpy as np
    from scipy import stats  # noqa: F401  (imported first: importing it is no part of locating)

    from kb.answers.changepoints import locate

    noise = random.Random(1)
    values = [(0.100 if i < length * 2 // 3 else 0.130) * (1 + noise.gauss(0, 0.02)) for i in range(length)]
    boundaries = list(range(20, length, 20))

    def matrix() -> None:  # the distances between every two runs, and their prefix sums over both axes
        series = np.asarray(values)
        prefix = np.zeros((length + 1, length + 1))
        prefix[1:, 1:] = np.abs(series[:, None] - series[None, :]).cumsum(0).cumsum(1)

    found: list[int] = []
    before_mb, before_s = _peak(matrix)
    after_mb, after_s = _peak(lambda: found.extend(locate(values, boundaries, floor=0.02)))
    print(f"\none series of {length:,} runs, {len(boundaries) + 1} releases: the change at run {found}")
    print(f"  n-by-n distances and prefix  {before_mb:8.1f} MB peak  {before_s:6.2f} s")
    ratio = after_mb / before_mb
    print(f"  locate                       {after_mb:8.1f} MB peak  {after_s:6.2f} s   {ratio:.3f}x the matrix")
    return {"matrix_mb_6k": before_mb, "locate_mb_6k": after_mb}


def _peak(work: Callable[[], None]) -> tuple[float, float]:
    """(peak MB allocated, seconds) of one call."""
    tracemalloc.start()
    began = time.perf_counter()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 1e6, time.perf_counter() - began
    finally:
        tracemalloc.stop()


def _measure(kb, size: int, repeats: int) -> dict[str, float]:
    from kb.answers.board import backend_package
    from kb.answers.changepoints import series_of
    from kb.answers.regressions import regressions
    from kb.index import answers
    from kb.index.db import connect, index_path

    db = connect(index_path(kb.cache_path))
    read, whole = [], []
    for _ in range(repeats):
        began = time.perf_counter()
        rows = answers.workload_evidence(db)
        read.append(time.perf_counter() - began)
        began = time.perf_counter()
        found = regressions(db, kb.entries_path)
        whole.append(time.perf_counter() - began)
    cells: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        cells.setdefault((row["workload"], row["backend"] or "?"), []).append(row)
    series = [runs for (_, backend), found in cells.items()
              for runs in series_of(found, backend_package(backend, found) or "torch").values()]  # fmt: skip
    longest = max((len(runs) for runs in series), default=0)
    read_s, whole_s = statistics.median(read), statistics.median(whole)
    said = f"{len(found.slowdowns)} slower, {len(found.breakages)} stopped working"
    print(f"\n{size:,} entries: {len(rows):,} runs read; {len(series)} series, the longest {longest} runs; {said}")
    print(f"  read the evidence            {read_s:8.3f} s (median of {repeats})")
    print(f"  the whole regressions pass   {whole_s:8.3f} s   {whole_s / read_s:.1f}x the read")
    key = f"{size // 1000}k"
    return {f"evidence_read_s_{key}": read_s, f"regressions_s_{key}": whole_s}


if __name__ == "__main__":
    run(tuple(int(n) for n in sys.argv[1:]) or (3_000, 10_000), repeats=3)
