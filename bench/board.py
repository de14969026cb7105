"""`kb board` at scale: the whole board as a process with `kb watch` running, on generated knowledge bases.

On a generated knowledge base (bench.generate, seed 1) of each size, with `kb watch` keeping the index
current: `kb board` and `kb board --missing` as whole processes, against `kb ls` with three filters and
`python -c pass` in the same run (the floors of a kb query and of any process), and the board computed in
process. Target at 100,000 entries: `kb board` under 1 s as a process with `kb watch` running.

    python -m bench.board [SIZE ...]      (default 10000 100000)
    python -m bench.board --kb DIR        (a knowledge base generated and indexed before: kb --kb DIR index)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.index import _median_process, _watching
from bench.timing import machine, user_env


def run(sizes: tuple[int, ...], repeats: int) -> dict[str, float]:
    from bench.generate import generate
    from kb.index.sync import sync

    figures: dict[str, float] = {}
    print(f"\nkb board; {machine()}")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kb-bench-board-") as folder:
            kb = generate(Path(folder) / "kb", size, seed=1)
            sync(kb, rebuild=True)
            figures |= _measure(kb, size, repeats)
    return figures


def _measure(kb, size: int, repeats: int) -> dict[str, float]:
    from kb.answers.board import board
    from kb.index.db import connect, index_path

    env = user_env(KB_HOME=str(kb.root))
    kb_ = [sys.executable, "-m", "kb"]
    db = connect(index_path(kb.cache_path))
    inside = []
    for _ in range(repeats):
        began = time.perf_counter()
        result = board(db)
        inside.append(time.perf_counter() - began)
    cells = sum(len(w.cells) for w in result.workloads)
    with _watching(env):
        python = _median_process([sys.executable, "-c", "pass"], env, repeats)
        ls = _median_process([*kb_, "ls", "--backend", "cuda", "--status", "failed", "--package", "torch>=2.9"], env,
                             repeats)  # fmt: skip
        shown = _median_process([*kb_, "board"], env, repeats)
        missing = _median_process([*kb_, "board", "--missing"], env, repeats)
    print(f"\n{size:,} entries: {len(result.workloads)} workloads, {cells} cells")
    print(f"  board in process (median)         {statistics.median(inside):9.3f} s")
    print(f"  kb board, process, kb watch       {shown:9.3f} s   (target < 1 s)")
    print(f"  kb board --missing, same          {missing:9.3f} s")
    print(f"  kb ls with 3 filters, same        {ls:9.3f} s   kb board is {shown / ls:.2f}x it")
    print(f"  python -c pass                    {python:9.3f} s   kb board is {shown / python:.1f}x it")
    key = f"{size // 1000}k"
    return {
        f"board_in_process_s_{key}": statistics.median(inside),
        f"board_process_s_{key}": shown,
        f"board_missing_process_s_{key}": missing,
        f"ls_process_s_{key}": ls,
        f"python_s_{key}": python,
    }


def existing(root: Path, repeats: int) -> dict[str, float]:
    """The same figures on a knowledge base made before (a 100,000-entry one takes long to generate)."""
    from kb.store import KnowledgeBase

    kb = KnowledgeBase(root)
    size = sum(1 for _ in kb.entries_path.rglob("*.md"))
    print(f"\nkb board; {machine()}")
    return _measure(kb, size, repeats)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--kb"]:
        existing(Path(sys.argv[2]), repeats=5)
    else:
        run(tuple(int(n) for n in sys.argv[1:]) or (10_000, 100_000), repeats=5)
