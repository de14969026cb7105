"""A command for the kill tests: `python noisy_run.py PROGRESS LINES EXIT_CODE`.

It marks each step in the file PROGRESS (started, writing, written), outside kb's reach, so a test can
tell which stage a recording was in; hands kb a metric and a file through $KB_RUN_DIR; writes LINES
numbered lines to stdout, which kb copies into the entry's output.log; and exits with EXIT_CODE.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

RUNNING_S = 0.2  # a moment of running before the output starts: a stage of its own to hit
LINE = "step {:07d} loss 1.234567 tokens/s 5120.0 " + "x" * 56 + "\n"  # 100 bytes


def mark(progress: Path, word: str) -> None:
    fd = os.open(progress, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{word}\n".encode())
    finally:
        os.close(fd)


def hand_over(run_dir: Path) -> None:
    with open(run_dir / "events.jsonl", "a") as events:
        events.write(json.dumps({"event": "metric", "name": "rounds", "value": 1}) + "\n")
    (run_dir / "settings.txt").write_text("batch=8\n")


def main(progress: Path, lines: int, exit_code: int) -> int:
    mark(progress, "started")
    hand_over(Path(os.environ["KB_RUN_DIR"]))
    time.sleep(RUNNING_S)
    mark(progress, "writing")
    out = sys.stdout
    for number in range(lines):
        out.write(LINE.format(number))
    out.flush()
    mark(progress, "written")
    return exit_code


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
