"""What kb costs a user per command: `kb --help`, `kb ls`, and `kb record -- true` against the bare command.

Targets: the recorder adds under 0.3 s to a command (median, no vendor tools present), and `kb record -- true`
takes at most 6x `python -c pass`; `kb --help` and `kb ls` on a small base (200 generated entries, indexed) take
at most 4x `python -c pass`. Baselines measured in the same run: the bare `true`, and `python -c pass` (the floor
for any Python command line tool). `kb search` against `python -c pass` is in bench.index.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.timing import alternate, machine, spread, user_env, wall

KB = [sys.executable, "-m", "kb"]
SMALL_BASE = 200  # entries in the base `kb ls` lists


def run(repeats: int) -> dict[str, float]:
    from bench.generate import default_cache, generate

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        root = Path(folder) / "kb"
        generate(root, SMALL_BASE, seed=1, cache=default_cache())
        env = user_env(KB_HOME=str(root))
        wall([*KB, "index"], env)
        samples = alternate(
            {
                "true (bare)": lambda: wall(["true"], env),
                "kb record -- true": lambda: wall([*KB, "record", "--", "true"], env),
                "python -c pass": lambda: wall([sys.executable, "-c", "pass"], env),
                "kb --help": lambda: wall([*KB, "--help"], env),
                "kb ls": lambda: wall([*KB, "ls"], env),
            },
            repeats,
        )
    medians = {name: spread(values)[0] for name, values in samples.items()}
    print(f"kb start-up and recorder overhead, {repeats} runs each, alternated; {machine()}")
    print(f"{'command':<22}{'median s':>10}{'p10 s':>9}{'p90 s':>9}")
    for name, values in samples.items():
        median, low, high = spread(values)
        print(f"{name:<22}{median:>10.3f}{low:>9.3f}{high:>9.3f}")
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
        "help_s": medians["kb --help"],
        "ls_s": medians["kb ls"],
        "help_ratio": medians["kb --help"] / python,
        "ls_ratio": medians["kb ls"] / python,
    }


if __name__ == "__main__":
    run(repeats=int(sys.argv[1]) if sys.argv[1:] else 21)
