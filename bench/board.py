"""`kb board` at scale: the whole board as a process with `kb watch` running, on generated knowledge bases.

On a generated knowledge base (bench.generate, seed 1) of each size, with `kb watch` keeping the index
current: `kb board` and `kb board --missing` as whole processes, against `kb ls` with three filters and
`python -c pass` in the same run (the floors of a kb query and of any process), and the board computed in
process. Target at 100,000 entries: `kb board` under 1 s as a process with `kb watch` running.

    python -m bench.board [SIZE ...]      (default 10000 100000)
    python -m bench.board --kb DIR        (a knowledge base generated and indexed before: kb --kb DIR index)
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.index import _watching
from bench.timing import machine, user_env


def run(sizes: tuple[int, ...], repeats: int) -> dict[str, float]:
    from bench.generate import default_cache, generate
    from kb.index.sync import sync

    figures: dict[str, float] = {}
    print(f"\nkb board; {machine()}")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kb-bench-board-") as folder:
            kb = generate(Path(folder) / "kb", size, seed=1, cache=default_cache())
            sync(kb, rebuild=True)
            figures |= _measure(kb, size, repeats)
    return figures


def _measure(kb, size: int, repeats: int) -> dict[str, float]:
    from kb.answers.board import board
    from kb.index.db import connect, index_path

    env = user_env(KB_HOME=str(kb.root))
    kb_ = [sys.executable, "-m", "kb"]
    db = connect(index_path(kb.cache_path))
    inside, inside_cpu = [], []
    for _ in range(repeats):
        began, cpu = time.perf_counter(), time.process_time()
        result = board(db)
        inside.append(time.perf_counter() - began)
        inside_cpu.append(time.process_time() - cpu)
    cells = sum(len(w.cells) for w in result.workloads)
    with _watching(env):
        python = _process([sys.executable, "-c", "pass"], env, repeats)
        ls = _process([*kb_, "ls", "--backend", "cuda", "--status", "failed", "--package", "torch>=2.9"], env, repeats)
        shown = _process([*kb_, "board"], env, repeats)
        missing = _process([*kb_, "board", "--missing"], env, repeats)
    print(f"\n{size:,} entries: {len(result.workloads)} workloads, {cells} cells; load average {_load()}")
    print(f"  {'':34}{'wall (median)':>14}{'CPU (median)':>14}")
    in_process = (statistics.median(inside), statistics.median(inside_cpu))
    for label, (wall, cpu), note in (
        ("board in process", in_process, ""),
        ("kb board, process, kb watch", shown, "target < 1 s"),
        ("kb board --missing, same", missing, ""),
        ("kb ls with 3 filters, same", ls, f"kb board is {shown[0] / ls[0]:.2f}x it"),
        ("python -c pass", python, ""),
    ):
        print(f"  {label:34}{wall:12.3f} s{cpu:12.3f} s   {note}".rstrip())
    key = f"{size // 1000}k"
    return {
        f"board_in_process_s_{key}": statistics.median(inside),
        f"board_in_process_cpu_s_{key}": statistics.median(inside_cpu),
        f"board_process_s_{key}": shown[0],
        f"board_process_cpu_s_{key}": shown[1],
        f"board_missing_process_s_{key}": missing[0],
        f"ls_process_s_{key}": ls[0],
        f"ls_process_cpu_s_{key}": ls[1],
        f"python_s_{key}": python[0],
    }


def _process(command: list[str], env: dict[str, str], repeats: int) -> tuple[float, float]:
    """Median wall time of a whole process, and its CPU time (user and system): on a machine shared with other
    work the CPU time leaves out the waits for a core."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def existing(root: Path, repeats: int) -> dict[str, float]:
    """The same figures on a knowledge base made before (a 100,000-entry one takes long to generate)."""
    from kb.store.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(root)
    size = sum(1 for _ in kb.entries_path.rglob("*.md"))
    print(f"\nkb board; {machine()}")
    return _measure(kb, size, repeats)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--kb"]:
        existing(Path(sys.argv[2]), repeats=5)
    else:
        run(tuple(int(n) for n in sys.argv[1:]) or (10_000, 100_000), repeats=5)
