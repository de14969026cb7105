"""`python -m bench.device_check` on the CPU: every figure has kb's value beside the independent one."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_the_device_check_prints_each_figure_beside_an_independent_one() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "bench.device_check", "--device", "cpu", "--steps", "6"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = {line[:28].strip(): line[28:].split() for line in ran.stdout.splitlines()[3:]}
    assert set(rows) == {
        "load phase (s)",
        "first step (s)",
        "steady step, median (s)",
        "samples/s (steady)",
        "last loss",
    }
    assert all(len(values) == 3 and "absent" not in values for values in rows.values()), ran.stdout
    assert rows["last loss"][0] == rows["last loss"][1] and rows["last loss"][2] == "1.000"
