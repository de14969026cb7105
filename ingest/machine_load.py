"""Was the machine busy while the run ran? Load average, CPU use of the machine and of the run, sampled slowly.

On a shared machine the same eager run took 55 to 1,000 ms a batch: a figure means little without the load
it was measured under. A daemon thread samples every INTERVAL_S seconds (a few reads of /proc: nothing the
run notices) into `machine.jsonl` in the run folder, one JSON object a line, so a killed run keeps them too;
`stop()` gives the summary the entry keeps under `hardware.load`. Linux's /proc/stat gives the machine's CPU
use; elsewhere only the load average and the run's own CPU time are read.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

SAMPLES = "machine.jsonl"
INTERVAL_S = 10.0
# Other processes' share of the machine's CPU, on average over the run, above which the entry says it was busy.
BUSY_SHARE = 0.25


def _machine_ticks() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine since boot, from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(value) for value in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def _threads() -> int | None:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


class LoadSampler:
    """Samples the machine's load between start() and stop(); never raises into the run."""

    def __init__(self, folder: Path, interval_s: float = INTERVAL_S):
        self._path = folder / SAMPLES
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cores = os.cpu_count() or 1
        self._loads: list[float] = []
        self._threads: list[int] = []
        self._first: tuple[float, float, tuple[int, int] | None] | None = None

    def start(self) -> None:
        self._first = (time.monotonic(), _cpu_seconds(), _machine_ticks())
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="kb-machine-load", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        try:
            load = os.getloadavg()[0]
            threads = _threads()
            self._loads.append(load)
            if threads is not None:
                self._threads.append(threads)
            line = {"time": time.time(), "load_1m": round(load, 2), "threads": threads, "cpu_s": _cpu_seconds()}
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        except OSError:  # no load average here, or the folder is full: fewer samples, same run
            pass

    def stop(self) -> dict[str, Any]:
        """The summary: load average (mean, max), the machine's CPU use, the run's CPU time, threads, busy."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._sample()
        if self._first is None:
            return {}
        began, cpu_before, ticks_before = self._first
        wall = max(time.monotonic() - began, 1e-9)
        run_cpu = _cpu_seconds() - cpu_before
        summary: dict[str, Any] = {"cores": self._cores, "samples": len(self._loads), "run_cpu_s": round(run_cpu, 3)}
        if self._loads:
            summary["load_1m_mean"] = round(sum(self._loads) / len(self._loads), 2)
            summary["load_1m_max"] = round(max(self._loads), 2)
        if self._threads:
            summary["threads_max"] = max(self._threads)
        ticks_after = _machine_ticks()
        if ticks_before is not None and ticks_after is not None and ticks_after[1] > ticks_before[1]:
            machine_busy = (ticks_after[0] - ticks_before[0]) / (ticks_after[1] - ticks_before[1])
            run_share = min(run_cpu / wall / self._cores, 1.0)
            others = max(machine_busy - run_share, 0.0)
            summary["machine_cpu_busy"] = round(machine_busy, 3)
            summary["run_cpu_share"] = round(run_share, 3)
            summary["others_cpu_share"] = round(others, 3)
            summary["busy"] = others > BUSY_SHARE
        elif self._loads:
            summary["busy"] = max(self._loads) > self._cores  # more runnable work than cores, at some point
        return summary


def busy_note(summary: dict[str, Any]) -> str | None:
    """The warning for the entry when other work shared the machine, or None."""
    if not summary.get("busy"):
        return None
    if "others_cpu_share" in summary:
        said = f"other processes used {summary['others_cpu_share']:.0%} of its {summary['cores']} cores on average"
    else:
        said = f"its load average reached {summary.get('load_1m_max')} on {summary['cores']} cores"
    return f"The machine was busy during this run: {said}. Timings may be slower and noisier than on an idle one."


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system
