"""Device memory and utilisation over a run: sampled where the backend gives them, said plainly where it does not,
and never a reason for the run to fail."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import torch
from conftest import only_entry, run_kb
from test_kbdev_run import kbdev

from ingest.pytorch import run
from ingest.pytorch.device_use import GB, DeviceSampler
from kb.store.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="the kbdev test device needs a C++ compiler")
ILLEGAL_ACCESS = "CUDA error: an illegal memory access was encountered"
REFUSED = "Allocator for kbdev is not a DeviceAllocator"


class CudaLike:
    """torch.cuda's memory and utilisation calls as documented (`memory_allocated(device=None)` and the others in
    bytes, `utilization(device=None)` in percent from NVML), for a device that cannot exist here: the figures are
    the test's own. With `fails`, memory_allocated raises as a device in trouble does, from its `fails`th call."""

    def __init__(self, fails: int | None = None):
        self.allocated = self.peak = 0
        self.calls = 0
        self.fails = fails

    def allocate(self, n_bytes: int) -> None:
        self.allocated += n_bytes
        self.peak = max(self.peak, self.allocated)

    def memory_allocated(self, device: int | None = None) -> int:
        self.calls += 1
        if self.fails is not None and self.calls >= self.fails:
            raise RuntimeError(ILLEGAL_ACCESS)
        return self.allocated

    def max_memory_allocated(self, device: int | None = None) -> int:
        return self.peak

    def memory_reserved(self, device: int | None = None) -> int:
        return self.peak + GB // 2

    def utilization(self, device: int | None = None) -> int:
        return 40 if self.calls % 2 else 80


@pytest.fixture
def device() -> str:
    return kbdev()


def _install(monkeypatch: pytest.MonkeyPatch, device: str, fake: CudaLike) -> None:
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "utilization"):
        monkeypatch.setattr(getattr(torch, device), name, getattr(fake, name), raising=False)


def test_the_kbdev_device_gives_no_memory_figures_and_the_entry_says_why(
    kb: KnowledgeBase, device: str, tmp_path: Path
) -> None:
    # kbdev's allocator is a plain one: torch.accelerator's memory calls refuse it, and its module has none.
    with run(workload="kbdev-memory", device=device, out=tmp_path / "runs") as r:
        x = torch.ones(3, 4).to(device)
        with r.step():
            x = x + x
    entry = only_entry(kb)
    assert entry.status == "completed"
    use = entry.data["memory"]["device_over_time"]
    assert use["sampled"] is False
    assert use["reason"].startswith("the kbdev backend refused every reading: torch.accelerator.memory_allocated: ")
    assert REFUSED in use["reason"]
    shown = run_kb("show", entry.id).stdout
    assert "device use" in shown and "not sampled: the kbdev backend refused every reading" in shown


def test_a_run_on_the_cpu_samples_nothing_and_says_so(kb: KnowledgeBase, tmp_path: Path) -> None:
    with run(workload="cpu-memory", device="cpu", out=tmp_path / "runs") as r, r.step():
        torch.ones(4) + 1
    entry = only_entry(kb)
    assert entry.data["memory"]["device_over_time"] == {
        "sampled": False,
        "device": "cpu",
        "reason": "the run is on the CPU: there is no device memory to sample",
    }
    assert "device use" not in run_kb("show", entry.id).stdout  # nothing to tell on every CPU run's page
    attachments = {item["path"] for item in entry.data["attachments"]}
    assert not any(path.endswith("device.jsonl") for path in attachments)


def test_device_memory_and_use_are_summarised_with_the_series_attached(
    kb: KnowledgeBase, device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = CudaLike()
    _install(monkeypatch, device, fake)
    with run(workload="kbdev-memory", device=device, out=tmp_path / "runs") as r:
        fake.allocate(GB)
        with r.step():
            fake.allocate(2 * GB)
        fake.allocate(-GB)  # freed before the run ends: the peak stays
    entry = only_entry(kb)
    use = entry.data["memory"]["device_over_time"]
    # One sample as the run starts, one as it ends (every 10 s between: this run is shorter).
    assert use["sampled"] is True and use["samples"] == 2 and use["interval_s"] == 10.0
    assert (use["allocated_max_gb"], use["peak_gb"], use["reserved_max_gb"]) == (2.0, 3.0, 3.5)
    assert use["read_with"]["allocated_bytes"] == f"torch.{device}.memory_allocated"
    assert use["read_with"]["utilization_pct"] == f"torch.{device}.utilization"
    assert any(REFUSED in line for line in use["refused"])  # the accelerator API was tried first
    series = kb.attachments_path(entry) / use["series"]
    lines = [json.loads(line) for line in series.read_text().splitlines()]
    assert [line["allocated_bytes"] for line in lines] == [0, 2 * GB]  # as the run began, and as it ended
    shown = " ".join(run_kb("show", entry.id).stdout.split())
    assert (
        "device use 2 samples, one every 10 s · allocated up to 2 GB · peak 3 GB · reserved up to 3.5 GB · "
        "utilisation 60% mean, 80% max (run/device.jsonl)"
    ) in shown


def test_a_memory_call_that_raises_never_fails_the_run(
    kb: KnowledgeBase, device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = CudaLike(fails=1)
    _install(monkeypatch, device, fake)
    with run(workload="kbdev-memory", device=device, out=tmp_path / "runs") as r:
        for _ in range(3):
            with r.step():
                fake.allocate(GB)
    entry = only_entry(kb)
    assert entry.status == "completed" and "failure" not in entry.data
    use = entry.data["memory"]["device_over_time"]
    assert "allocated_max_gb" not in use and use["peak_gb"] == 3.0
    assert f"torch.{device}.memory_allocated: RuntimeError: {ILLEGAL_ACCESS}" in use["refused"]


def test_the_sampler_goes_on_without_a_figure_that_fails_mid_run(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = CudaLike(fails=4)
    _install(monkeypatch, device, fake)
    sampler = DeviceSampler(tmp_path, device, interval_s=0.01)
    sampler.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len((tmp_path / "device.jsonl").read_text().splitlines()) < 6:
        fake.allocate(GB)
        time.sleep(0.01)
    summary = sampler.stop()
    lines = [json.loads(line) for line in (tmp_path / "device.jsonl").read_text().splitlines()]
    assert len(lines) >= 6 and summary["samples"] == len(lines)
    # Three samples read the allocation; from the fourth call on it raised, and the other figures went on.
    assert sum("allocated_bytes" in line for line in lines) == 3
    assert all("peak_bytes" in line and "utilization_pct" in line for line in lines)
    assert summary["utilization_max_pct"] == 80 and 40 <= summary["utilization_mean_pct"] <= 80
