"""What masking credentials costs: a log's characters per second, and a chatty program under `kb record`.

Two figures, each against a baseline measured in the same run:
- `redact_text` on four generated logs (numbers only; `tokens/s=` on every line, as language-model training
  prints; a URL on every line, so that every line is searched for the shapes; one endless line), against
  searching every character for every pattern (`kb.secrets.redact._mask_everywhere`, how masking worked before
  it searched only where a credential can be), in MB of CPU time a second; with `--before REV`,
  kb/secrets/redact.py of that git revision too, timed in turns with now, the ratio of now to it, and the seconds
  one pass over 16 MB takes;
- a program that prints `lines` log lines as fast as it can, its own time under `kb record` against bare: the
  recorder masks the output as it passes it on, so slow masking makes the program wait on its pipe.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.timing import machine, user_env

CHATTY = """
import sys, time
started, written = time.perf_counter(), 0
for step in range({lines}):
    line = f"step {{step}} loss=0.{{step % 997:03d}} lr=3e-4 tokens/s=12345.6 /data/shard-{{step % 64}}.bin"
    written += len(line) + 1
    print(line)
print(f"took {{time.perf_counter() - started:.4f}} s for {{written}} bytes", file=sys.stderr)
"""
TOOK = re.compile(r"took ([0-9.]+) s for ([0-9]+) bytes")


def logs(megabytes: float) -> dict[str, str]:
    size = int(megabytes * 1_000_000)
    numbers = "".join(
        f"step {i} loss=0.{i % 997:03d} lr=3e-4 grad_norm=1.23 /data/shard-{i % 64}.bin\n" for i in range(size // 60)
    )
    tokens = "".join(
        f"step {i} loss=0.{i % 997:03d} tokens/s=12345.6 /data/shard-{i % 64}.bin\n" for i in range(size // 55)
    )
    tasks = "".join(
        f"task {i}: fetched https://hub.example.org/shard-{i % 64}.bin, mask ratio 0.15\n" for i in range(size // 60)
    )
    return {
        "numbers": numbers[:size],
        "tokens/s on every line": tokens[:size],
        "a URL on every line": tasks[:size],
        "one endless line": "x" * size,
    }


def _rate(mask: Callable[[str], str], text: str, repeats: int) -> float:
    """MB a second, the median of `repeats` runs."""
    return _rates([mask], text, repeats)[0]


def _rates(masks: list[Callable[[str], str]], text: str, repeats: int) -> list[float]:
    """MB a second of each, the median of `repeats` runs, taken in turns: a busy moment of the machine falls on all.
    The time is the process's own CPU time: on a shared machine the wall clock counts the others' work too."""
    seconds: list[list[float]] = [[] for _ in masks]
    for _ in range(repeats):
        for mask, taken in zip(masks, seconds, strict=True):
            started = time.process_time()
            mask(text)
            taken.append(time.process_time() - started)
    return [len(text) / 1e6 / statistics.median(taken) for taken in seconds]


def _program_seconds(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    """The program's own time and the bytes it printed, as it reports them on stderr (kb record passes it on)."""
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = TOOK.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{command} failed: {done.stderr[-2000:]}")
    return float(found[-1][0]), int(found[-1][1])


def run(quick: bool, before: str | None = None) -> None:
    """A few MB of each log and a 16 MB program, medians of 5; `quick`: half a MB and 1.3 MB, once."""
    measure(megabytes=0.5 if quick else 4, lines=20_000 if quick else 250_000, repeats=1 if quick else 5, rev=before)


def measure(megabytes: float, lines: int, repeats: int, rev: str | None = None) -> None:
    from bench.secrets_detectors import kb_masker
    from kb.secrets.redact import _mask_everywhere, redact_text

    slow = min(repeats, 3)
    print(f"masking credentials, medians of {repeats} (searching everywhere: of {slow}); {machine()}")
    older = kb_masker(rev) if rev else None
    then = f"{rev:>12} MB/s{'now/then':>10}" if rev else ""
    print(f"{'log':<26}{'MB':>6}{'kb MB/s':>10}{'everywhere MB/s':>17}{'ratio':>8}{then}")
    for name, text in logs(megabytes).items():
        now, *old = _rates([redact_text, *([older] if older else [])], text, repeats)
        before = _rate(_mask_everywhere, text, slow)
        then = f"{old[0]:>17.2f}{now / old[0]:>9.1f}x" if old else ""
        print(f"{name:<26}{len(text) / 1e6:>6.1f}{now:>10.2f}{before:>17.2f}{now / before:>7.1f}x{then}")
    if rev:
        for name, text in logs(16).items():
            now, old = _rates([redact_text, older], text, 1)
            print(f"one pass over 16 MB of {name}: {16 / now:.1f} s ({16 / old:.1f} s at {rev})")

    with tempfile.TemporaryDirectory(prefix="kb-bench-") as folder:
        root = Path(folder) / "kb"
        env = user_env(KB_HOME=str(root))
        subprocess.run([sys.executable, "-m", "kb", "init", str(root)], env=env, check=True, capture_output=True)
        program = Path(folder) / "chatty.py"
        program.write_text(CHATTY.format(lines=lines))
        bare, recorded = [], []  # from inside the knowledge base: a folder named kb beside would shadow kb
        for _ in range(repeats):  # alternated, so that a busy moment of the machine falls on both
            seconds, written = _program_seconds([sys.executable, str(program)], env, root)
            bare.append(seconds)
            command = [sys.executable, "-m", "kb", "record", "--", sys.executable, str(program)]
            recorded.append(_program_seconds(command, env, root)[0])
    median_bare, median_recorded = statistics.median(bare), statistics.median(recorded)
    print(
        f"a program printing {lines:,} lines ({written / 1e6:.1f} MB) as fast as it can: {median_bare:.2f} s bare, "
        f"{median_recorded:.2f} s under kb record ({median_recorded / median_bare:.1f}x)"
    )


if __name__ == "__main__":
    revision = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
    run(quick="--quick" in sys.argv, before=revision)
