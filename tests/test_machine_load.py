"""The machine's load over a run, measured against real work: a CPU-bound child process and the run's own CPU time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ingest.machine_load import SAMPLES, LoadSampler, busy_note


def test_another_process_burning_a_core_makes_the_machine_busy(tmp_path: Path) -> None:
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sampler = LoadSampler(tmp_path, interval_s=0.2)
        sampler.start()
        began = time.process_time()
        while time.process_time() - began < 0.5:  # the run's own work: half a second of CPU
            pass
        time.sleep(1.0)
        summary = sampler.stop()
    finally:
        burner.kill()
        burner.wait()
    assert summary["run_cpu_s"] >= 0.45
    # One core of the machine's went to the other process (and more to whatever else runs here).
    assert summary["others_cpu_share"] >= min(0.9 / summary["cores"], 0.3)
    assert summary["busy"] is True
    assert summary["load_1m_max"] >= 0 and summary["samples"] >= 3
    lines = [json.loads(line) for line in (tmp_path / SAMPLES).read_text().splitlines()]
    assert len(lines) == summary["samples"] and all("load_1m" in line and "cpu_s" in line for line in lines)
    note = busy_note(summary)
    assert note is not None and "The machine was busy during this run: other processes used" in note


def test_a_quiet_summary_gives_no_warning() -> None:
    assert busy_note({"busy": False, "cores": 2, "others_cpu_share": 0.01}) is None
