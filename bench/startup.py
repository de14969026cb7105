"""What kb costs a user per command: `kb --help`, and `kb record -- true` against the bare command.

Targets: the recorder adds under 0.3 s to a command (median, no vendor tools present), and `kb record -- true`
takes at most 6x `python -c pass`; `kb --help` answers in under 0.2 s. Baselines measured in the same run: the
bare `true`, and `python -c pass` (the floor for any Python command line tool). `kb search` against
`python -c pass` is in bench.index (it needs a knowledge base to search).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.timing import alternate, machine, spread, user_env, wall

KB = [sys.executable, "-m", "kb"]


def run(repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        root = Path(folder) / "kb"
        env = user_env(KB_HOME=str(root))
        wall([*KB, "init", str(root)], env)
        samples = alternate(
            {
                "true (bare)": lambda: wall(["true"], env),
                "kb record -- true": lambda: wall([*KB, "record", "--", "true"], env),
                "python -c pass": lambda: wall([sys.executable, "-c", "pass"], env),
                "kb --help": lambda: wall([*KB, "--help"], env),
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
    help_over = medians["kb --help"] - medians["python -c pass"]
    print(
        f"recorder overhead: {overhead:.3f} s over the bare command (target < 0.3 s); "
        f"ratio {medians['kb record -- true'] / medians['true (bare)']:.0f}x a bare `true`, "
        f"{medians['kb record -- true'] / medians['python -c pass']:.1f}x `python -c pass` (target <= 6x)"
    )
    print(
        f"kb --help: {medians['kb --help']:.3f} s (target < 0.2 s), {help_over:.3f} s over `python -c pass`, "
        f"ratio {medians['kb --help'] / medians['python -c pass']:.1f}x"
    )
    return {"record_overhead_s": overhead, "help_s": medians["kb --help"]}
