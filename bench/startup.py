"""What kb costs a user per command: `kb --help`, `kb ls`, and `kb record -- true` against the bare command.

Targets: the recorder adds under 0.3 s to a command (median, no vendor tools present), and `kb record -- true`
takes at most 6x `python -c pass`; `kb --help` and `kb ls` on a small base (200 generated entries, indexed) take
at most 4x `python -c pass`. Baselines measured in the same run: the bare `true`, and `python -c pass` (the floor
for any Python command line tool). `kb search` against `python -c pass` is in bench.index.

`kb ls` lists a base nothing writes to: its start-up. The recordings go to a second base, listed after each one as
`kb ls, one new entry`: start-up and indexing the entry just written (reading its YAML, checking it against the
schema), which a user meets after every `kb record`; it has no target of its own.

`python -m bench.startup [REPEATS]` (default 21).
"""

from __future__ import annotations

import functools
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

from bench.timing import alternate, machine, spread, user_env, wall

KB = [sys.executable, "-m", "kb"]
SMALL_BASE = 200  # entries in the base `kb ls` lists


def run(repeats: int) -> dict[str, float]:
    from bench.generate import default_cache, generate

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        listed, recorded = Path(folder) / "listed", Path(folder) / "recorded"
        for root in (listed, recorded):
            generate(root, SMALL_BASE, seed=1, cache=default_cache())
        env, env_recorded = user_env(KB_HOME=str(listed)), user_env(KB_HOME=str(recorded))
        wall([*KB, "index"], env)
        wall([*KB, "index"], env_recorded)
        load_before = os.getloadavg()[0]
        commands = {
            "true (bare)": (["true"], env),
            "kb record -- true": ([*KB, "record", "--", "true"], env_recorded),
            "kb ls, one new entry": ([*KB, "ls"], env_recorded),
            "python -c pass": ([sys.executable, "-c", "pass"], env),
            "kb --help": ([*KB, "--help"], env),
            "kb ls": ([*KB, "ls"], env),
        }
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        samples = alternate(
            {name: functools.partial(_timed, *command, cpu[name]) for name, command in commands.items()}, repeats
        )
    medians = {name: spread(values)[0] for name, values in samples.items()}
    cpu_medians = {name: statistics.median(values[1:]) for name, values in cpu.items()}  # [0]: the warm-up
    print(f"kb start-up and recorder overhead, {repeats} runs each, alternated; {machine()}")
    print(f"load average {load_before:.1f} before the runs, {os.getloadavg()[0]:.1f} after")
    print(f"{'command':<22}{'median s':>10}{'p10 s':>9}{'p90 s':>9}{'x python':>10}{'CPU s':>8}{'x python':>10}")
    for name, values in samples.items():
        median, low, high = spread(values)
        ratio, cpu_ratio = median / medians["python -c pass"], cpu_medians[name] / cpu_medians["python -c pass"]
        print(
            f"{name:<22}{median:>10.3f}{low:>9.3f}{high:>9.3f}{ratio:>9.1f}x{cpu_medians[name]:>8.3f}{cpu_ratio:>9.1f}x"
        )
    overhead = medians["kb record -- true"] - medians["true (bare)"]
    print(
        f"recorder overhead: {overhead:.3f} s over the bare command (target < 0.3 s); "
        f"ratio {medians['kb record -- true'] / medians['true (bare)']:.0f}x a bare `true`, "
        f"{medians['kb record -- true'] / medians['python -c pass']:.1f}x `python -c pass` (target <= 6x)"
    )
    python = medians["python -c pass"]
    for name in ("kb --help", "kb ls"):
        print(
            f"{name}: {medians[name]:.3f} s, {medians[name] - python:.3f} s over `python -c pass`, "
            f"ratio {medians[name] / python:.1f}x (target <= 4x)"
        )
    return {
        "record_overhead_s": overhead,
        "record_ratio": medians["kb record -- true"] / python,
        "help_s": medians["kb --help"],
        "ls_s": medians["kb ls"],
        "ls_new_entry_s": medians["kb ls, one new entry"],
        "help_ratio": medians["kb --help"] / python,
        "ls_ratio": medians["kb ls"] / python,
    }


def _timed(command: list[str], env: dict[str, str], cpu: list[float]) -> float:
    """Wall seconds of one run; its CPU seconds (user and system: no wait for a core) appended to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = wall(command, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return seconds


if __name__ == "__main__":
    run(repeats=int(sys.argv[1]) if sys.argv[1:] else 21)
