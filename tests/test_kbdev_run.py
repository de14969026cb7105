"""Instrumented runs end to end on the kbdev PrivateUse1 test device (tests/privateuse1/), as a new backend is run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, only_entry, run_kb

from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "tests" / "scripts" / "kbdev_run.py"
KBDEV_TEXT = "is not currently supported on the kbdev backend and will fall back to run on the CPU"
pytestmark = pytest.mark.skipif(shutil.which("c++") is None, reason="the kbdev test device needs a C++ compiler")


def run_script(scenario: str, *python_options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *python_options, str(SCRIPT), scenario], capture_output=True, text=True, timeout=300,
        env={**os.environ},
    )  # fmt: skip


def test_a_run_on_a_backend_that_refuses_device_wide_sync_completes(kb: KnowledgeBase) -> None:
    result = run_script("native")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.status == "completed" and "failure" not in entry.data
    timings = entry.data["timings"]
    assert timings["step_s"]["count"] == 4 and timings["load_s"] > 0
    # kbdev refuses torch.accelerator.synchronize(); its current stream's synchronize works.
    assert timings["device_sync"] == "torch.accelerator.current_stream().synchronize"
    assert "Backend doesn't support synchronizing all streams on device" in entry.body
    assert entry.data["fallbacks"]["stayed_on_device"] is True


def test_reading_logged_device_tensors_back_is_not_blamed_on_the_run(kb: KnowledgeBase) -> None:
    # The steps run only add.Tensor; each step's result is logged as a tensor on the device. kb reads them back by a
    # copy to the host: no operator of its own runs there (stacking them on the device fell back as aten::cat.out).
    result = run_script("logged")
    assert result.returncode == 0, result.stderr
    assert "fall back to run on the CPU" not in result.stderr  # no warning of kb's making in the run's output
    data = only_entry(kb).data
    assert data["fallbacks"]["stayed_on_device"] is True, data["fallbacks"]
    assert data["metrics"]["loss"]["step"] == 5 and data["metrics"]["loss"]["value"] > 0


def test_a_fallback_warned_before_the_run_started_is_not_called_staying_on_the_device(kb: KnowledgeBase) -> None:
    result = run_script("warned_before")
    assert result.returncode == 0, result.stderr
    fallbacks = only_entry(kb).data["fallbacks"]
    assert fallbacks["stayed_on_device"] is False
    assert fallbacks["warnings"]["before_start"][0]["op"] == "aten::addmm.out"
    assert "fell back to the CPU before the run started" in fallbacks["summary"]


def test_the_runs_own_output_overrules_a_watch_that_saw_no_fallback(kb: KnowledgeBase) -> None:
    # "always": Python keeps no registry of the warning, so only the output tells that addmm fell back.
    result = run_kb("record", "--", sys.executable, "-W", "always", str(SCRIPT), "warned_before", timeout=300)
    assert result.returncode == 0, result.stderr
    fallbacks = only_entry(kb).data["fallbacks"]
    assert fallbacks["stayed_on_device"] is False
    assert fallbacks["output_ops"] == ["aten::addmm.out"]
    assert any(line.startswith("output.log:") and KBDEV_TEXT in line for line in fallbacks["evidence"])


class _RefusingStream:
    """A stream as a backend without stream sync has it: synchronize() raises."""

    def synchronize(self) -> None:
        raise RuntimeError("this backend cannot synchronize a stream")


def kbdev() -> str:
    """The kbdev device, built and registered in this process."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("kb_test_privateuse1_device", REPO / "tests/privateuse1/device.py")
    assert spec and spec.loader
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    return helper.load()


def test_when_every_way_to_sync_is_refused_steps_are_timed_as_launch_times(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from ingest.pytorch.device import NO_SYNC, Sync

    device = kbdev()
    monkeypatch.setattr(getattr(torch, device), "current_stream", _RefusingStream, raising=False)
    sync = Sync(device)
    sync()
    sync()
    assert sync.method == NO_SYNC
    assert [line.split(":")[0] for line in sync.refused] == [
        "torch.accelerator.synchronize",
        f"torch.{device}.current_stream().synchronize",
    ]
