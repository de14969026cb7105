"""torch_xla as the real package, on PJRT's CPU device: lazy tensors, real XLA compiles, real CPU fallbacks.

torch_xla needs its own torch (`make test-backends` makes that venv and runs these); elsewhere they are skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, only_entry, run_kb

from kb.store.knowledge_base import KnowledgeBase

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(
        importlib.util.find_spec("torch_xla") is None,
        reason="torch_xla is not installed here (it needs its own torch: `make test-backends`)",
    ),
]
SCRIPT = REPO / "tests" / "scripts" / "xla_run.py"
XLA_ENV = {"PJRT_DEVICE": "CPU", "PT_XLA_DEBUG": "0", "PT_XLA_DEBUG_LEVEL": "0"}


def run_script(scenario: str, steps: int = 8, **env: str) -> subprocess.CompletedProcess:
    ran = subprocess.run(
        [sys.executable, str(SCRIPT), scenario, str(steps)],
        capture_output=True,
        text=True,
        env={**os.environ, **XLA_ENV, **env},
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def test_step_times_are_device_times(kb: KnowledgeBase) -> None:
    """Without a wait a step's time is its launch (0.74 ms where the step took 524 ms)."""
    ran = run_script("steps", 8)
    own = float(ran.stdout.split("own_step_s=")[1].split()[0])
    timings = only_entry(kb).data["timings"]
    assert timings["device_sync"] == "torch_xla.sync+xm.wait_device_ops"
    # kb's median against the script's own timer with torch_xla's own wait, over the same steps; a launch time is
    # a small fraction of the work.
    assert 0.5 < timings["step_s"]["median"] / own < 2.0


def test_a_recompile_after_warm_up_is_preparation(kb: KnowledgeBase) -> None:
    """A ragged last batch recompiles (XLA's CompileTime, no Dynamo involved): not a steady step."""
    run_script("ragged", 8)
    entry = only_entry(kb)
    assert entry.data["timings"]["step_s"]["count"] == 5  # 8 steps, 2 of warm-up, the recompiling last one
    assert "1 step after warm-up compiled (steps 7)" in entry.body


def test_identity_and_compile_time_come_from_torch_xla(kb: KnowledgeBase) -> None:
    run_script("openxla", 5)
    data = only_entry(kb).data
    device = data["hardware"]["torch_device"]
    assert device["type"] == "xla" and device["count"] == 1 and device["name"] == "CPU"
    assert data["precision"]["xla_mat_mul_precision"] in ("default", "high", "highest")
    compile_time = data["backend_evidence"]["xla_metrics"]["run"]["CompileTime_s"]
    assert data["timings"]["compile_s"] == compile_time and data["timings"]["compile_source"] == "torch_xla CompileTime"
    assert data["versions"]["torch-xla"].startswith("2.")


def test_fallbacks_in_script_and_under_kb_record_alone(kb: KnowledgeBase) -> None:
    run_script("fallbacks", 4)
    fallbacks = only_entry(kb).data["fallbacks"]
    assert fallbacks["stayed_on_device"] is False
    assert {"aten::nonzero", "aten::_unique2"} <= set(fallbacks["warnings"]["xla_fallback_ops"])


def test_kb_record_alone_sees_the_fallbacks_the_metrics_report_printed(kb: KnowledgeBase) -> None:
    """Under `kb record` alone, the aten:: counters of the metrics report the run printed are its fallbacks."""
    ran = run_kb(
        "record",
        "--",
        sys.executable,
        str(SCRIPT),
        "plain",
        "3",
        env={**XLA_ENV, "PT_XLA_DEBUG_LEVEL": "1"},
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    data = only_entry(kb).data
    assert data["fallbacks"]["stayed_on_device"] is False
    assert {"aten::nonzero", "aten::_unique2"} <= set(data["fallbacks"]["output_ops"])
    assert "aten::_local_scalar_dense" not in data["fallbacks"]["output_ops"]  # .item() is a transfer, not a fallback
    assert data["environment"]["PT_XLA_DEBUG_LEVEL"] == "1"  # torch_xla's debug switches are kept
    json.dumps(data)


def test_the_persistent_compile_cache_says_whether_it_was_empty(kb: KnowledgeBase, tmp_path: Path) -> None:
    cache = tmp_path / "xla-cache"
    for _ in range(2):
        run_script("steps", 3, XLA_RUN_CACHE=str(cache))
    states = [entry.data["backend_evidence"]["caches"]["xla_persistent_cache"] for entry in kb.iter_entries([])]
    # The first run found no cache (torch_xla makes the folder); only the second could find it populated.
    assert sorted(state["state"] for state in states) == ["absent", "populated"]
    assert all(state["path"] == str(cache) and state["read_only"] is False for state in states)


def test_reading_back_an_unsynced_logged_value_is_not_the_runs_compile(kb: KnowledgeBase) -> None:
    """A value logged after the last step has a graph nothing ran: kb reads it after the run's own figures are
    taken, and what that costs is kept apart, never in the run's CompileTime or compile_s."""
    ran = run_script("logged", 4)
    said = dict(re.findall(r"(own_compiles|own_compile_s|pending)=(\S+)", ran.stdout))
    data = only_entry(kb).data
    xla = data["backend_evidence"]["xla_metrics"]
    assert xla["run"]["CompileTime"] == int(said["own_compiles"])
    assert abs(data["timings"]["compile_s"] - float(said["own_compile_s"])) < 1e-5
    assert xla["kb_readback"]["CompileTime"] >= 1  # the graph kb could not avoid, on its own account
    assert abs(data["metrics"]["pending"]["value"] - float(said["pending"])) < 1e-5
    assert data["metrics"]["loss"]["step"] == 3  # the synced values, read as before


def test_a_flush_leaves_a_pending_lazy_tensor_for_later_and_runs_no_graph() -> None:
    """The stream reads back logged values as the run goes: never one whose graph has not run."""
    import torch
    import torch_xla
    import torch_xla.debug.metrics as met

    from ingest.pytorch.instrument import _unread

    device = torch_xla.device()
    ready = torch.randn(4, 4, device=device).sum()
    torch_xla.sync()
    pending = ready * 2
    before = met.metric_data("CompileTime")
    assert _unread([1.0, ready, pending, ready], 0) == 2
    assert _unread([1.0, ready], 0) == 2
    assert met.metric_data("CompileTime") == before  # asking ran nothing
    torch_xla.sync()  # the run's own sync: now it has data
    assert _unread([1.0, ready, pending, ready], 2) == 4
