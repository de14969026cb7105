"""Device memory and utilisation over the run, sampled slowly beside the machine's load (ingest.machine_load).

Every INTERVAL_S seconds a daemon thread asks torch, for the run's device: the memory allocated now, the peak
since the last reset, the memory reserved by the caching allocator, and the utilisation where torch can ask the
vendor's library (`torch.cuda.utilization()`: NVML through pynvml, or amdsmi on ROCm). Each figure is read
through torch's accelerator API (`torch.accelerator.memory_allocated` ...) when the device is the current
accelerator, else through the backend module's own (`torch.cuda.memory_allocated`, a PrivateUse1 module's).
The samples go to `device.jsonl` in the run folder, one JSON object a line, so a killed run keeps them.

Backends differ in what they support: the kbdev test device, whose allocator is not a caching DeviceAllocator,
refuses the accelerator API ("Allocator for kbdev is not a DeviceAllocator"). A way that raises is dropped for
the rest of the run, the next one tried, and the reason kept; nothing a reader raises reaches the run. A run on
the CPU samples nothing and says so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ingest.pytorch.device import runtime_started

SAMPLES = "device.jsonl"
INTERVAL_S = 10.0
LAST_SAMPLE_WAIT_S = 5.0  # how long the run's end waits for a sample the thread is taking
GB = 1024**3
# The figures sampled, each with torch's name for the call that reads it.
FIGURES = (
    ("allocated_bytes", "memory_allocated"),
    ("peak_bytes", "max_memory_allocated"),
    ("reserved_bytes", "memory_reserved"),
    ("utilization_pct", "utilization"),
)
Reader = tuple[str, Callable[[], Any]]  # (the call, as the entry names it; a reader of one figure)


def sample_names(rank: int) -> str:
    """Rank 0's samples are the run's; the other ranks of a job, sharing its folder, keep their own."""
    return SAMPLES if rank == 0 else f"device-rank-{rank}.jsonl"


class DeviceSampler:
    """Samples the device's memory and utilisation between start() and stop(); never raises into the run."""

    def __init__(self, folder: Path, device_type: str, rank: int = 0, interval_s: float = INTERVAL_S):
        self._path = folder / sample_names(rank)
        self._device_type = device_type
        self._interval = interval_s
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the last sample, taken by stop(), may meet a slow one of the thread's
        self._thread: threading.Thread | None = None
        self._ways: dict[str, list[Reader]] = {}
        self._used: dict[str, str] = {}  # per figure, the call that read it
        self.refused: list[str] = []
        self._samples: list[dict[str, Any]] = []

    def start(self) -> None:
        if self._device_type == "cpu":
            return
        index = _call(lambda: torch.accelerator.current_device_index())  # the run's device, from the run's thread
        self._ways = {figure: _ways(self._device_type, call, index) for figure, call in FIGURES}
        self._sample()
        if any(self._ways.values()):
            self._thread = threading.Thread(target=self._loop, name="kb-device-use", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            self._sample_locked()

    def _sample_locked(self) -> None:
        if runtime_started(self._device_type) is False:
            return  # reading memory would start the runtime (TorchTPU: minutes, and a warning into the run)
        line: dict[str, Any] = {"time": round(time.time(), 3)}
        for figure, ways in self._ways.items():
            while ways:
                name, read = ways[0]
                try:
                    value = read()
                except Exception as exc:  # refused, missing, or failing now: the next way, never the run's failure
                    ways.pop(0)
                    self.refused.append(f"{name}: {type(exc).__name__}: {str(exc).strip()}"[:300])
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    line[figure] = value
                    self._used[figure] = name
                break
        if len(line) == 1:
            return
        self._samples.append(line)
        try:
            with open(self._path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        except OSError:  # a full disk costs the series, never the run
            pass

    def stop(self) -> dict[str, Any]:
        """The summary for the entry's `memory.device_over_time`: peaks and utilisation, or why nothing was sampled."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        device = self._device_type
        if device == "cpu":
            return {"sampled": False, "device": device, "reason": "the run is on the CPU: there is no device memory "
                    "to sample"}  # fmt: skip
        if self._lock.acquire(timeout=LAST_SAMPLE_WAIT_S):  # a reader stuck in a driver call never holds up the end
            try:
                self._sample_locked()
            finally:
                self._lock.release()
        if not self._samples and runtime_started(device) is False:
            return {"sampled": False, "device": device, "reason": f"the {device} runtime never started"}
        if not self._samples:
            refused = "; ".join(dict.fromkeys(self.refused)) or "the backend gives none of these figures"
            return {"sampled": False, "device": device, "reason": f"the {device} backend refused every reading: "
                    f"{refused}"}  # fmt: skip
        summary: dict[str, Any] = {
            "sampled": True, "device": device, "samples": len(self._samples), "interval_s": self._interval,
            "series": f"run/{self._path.name}",  # the run folder is the entry's attachment folder run/
            "read_with": dict(self._used),
        }  # fmt: skip
        for figure, key in (("allocated_bytes", "allocated_max_gb"), ("peak_bytes", "peak_gb"),
                            ("reserved_bytes", "reserved_max_gb")):  # fmt: skip
            values = [sample[figure] for sample in self._samples if figure in sample]
            if values:
                summary[key] = round(max(values) / GB, 3)
        use = [sample["utilization_pct"] for sample in self._samples if "utilization_pct" in sample]
        if use:
            summary["utilization_mean_pct"] = round(sum(use) / len(use), 1)
            summary["utilization_max_pct"] = max(use)
        if self.refused:
            summary["refused"] = list(dict.fromkeys(self.refused))
        return summary


def _ways(device_type: str, call: str, index: int | None) -> list[Reader]:
    """The ways to read one figure, best first: the accelerator API when the device is the current accelerator,
    then the backend module's own function."""
    ways: list[Reader] = []
    accelerator = getattr(torch, "accelerator", None)
    current = _call(lambda: accelerator.current_accelerator()) if accelerator else None
    if current is not None and current.type == device_type and callable(getattr(accelerator, call, None)):
        ways.append((f"torch.accelerator.{call}", _bound(getattr(accelerator, call), index)))
    module = getattr(torch, device_type, None)
    if callable(getattr(module, call, None)):
        ways.append((f"torch.{device_type}.{call}", _bound(getattr(module, call), index)))
    return ways


def _bound(function: Callable[..., Any], index: int | None) -> Callable[[], Any]:
    return (lambda: function(index)) if index is not None else function


def _call(reader: Callable[[], Any]) -> Any:
    try:
        return reader()
    except Exception:  # a backend without this call: the figure stays unknown
        return None
