"""OpenVINO as a real torch.compile backend (`backend="openvino"`) on the CPU plugin.

Each run is a process of its own: importing openvino.torch changes Dynamo's settings for the whole process.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import only_entry

from kb.store.knowledge_base import KnowledgeBase

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="OpenVINO is not installed"),
]

SCRIPT = """
import sys
import torch
import openvino.torch  # registers backend="openvino"
from ingest.pytorch import run

device = sys.argv[1]


def model(x):
    return torch.cumprod(torch.relu(x @ x) + 1, 0).sum(0) * 2  # cumprod: outside OpenVINO's partitioner table


compiled = torch.compile(model, backend="openvino", options={"device": device})
with run(workload="ov-tiny", backend="openvino", mode="compiled", device="cpu", warmup_steps=2) as r:
    x = torch.randn(8, 8)
    for _ in range(5):
        with r.step():
            compiled(x)
"""


# An independent timer of OpenVINO's own compile, installed before kb's watch: it prints the seconds spent in
# OpenVINO's compile of each partition, which happens at the partition's first execution.
TIMED = """
import atexit, time
import openvino.frontend.pytorch.torchdynamo.execute as ov_execute

spent = []
original = ov_execute.openvino_compile


def timed(*args, **kwargs):
    began = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - began)


ov_execute.openvino_compile = timed
atexit.register(lambda: print("openvino compile", sum(spent), len(spent)))
"""


# OpenVINO imported only once the run has begun: its compile is timed from that import on.
LATE = """
import sys
import torch
from ingest.pytorch import run

with run(workload="ov-tiny", backend="openvino", mode="compiled", device="cpu", warmup_steps=2) as r:
    import openvino.torch
{timed}
    compiled = torch.compile(lambda x: torch.relu(x @ x).sum(0) * 2, backend="openvino")
    x = torch.randn(8, 8)
    for _ in range(5):
        with r.step():
            compiled(x)
"""


def run_openvino(device: str, timed: bool = False, late: bool = False) -> subprocess.CompletedProcess:
    script = textwrap.dedent(SCRIPT)
    if timed:
        script = script.replace("from ingest.pytorch import run\n", "from ingest.pytorch import run\n" + TIMED)
    if late:
        script = LATE.format(timed=textwrap.indent(TIMED, "    "))
    ran = subprocess.run(
        [sys.executable, "-c", script, device],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran


def test_openvino_that_cannot_compile_is_said_to_have_never_run(kb: KnowledgeBase) -> None:
    """With no such device OpenVINO runs every partition in plain PyTorch and says so only at DEBUG: the entry must
    not read as a normal compiled run."""
    run_openvino("GPU")
    entry = only_entry(kb)
    backend = entry.data["fallbacks"]["compile_backend"]
    assert backend["backend"] == "openvino" and backend["ran"] is False
    assert backend["partitions"] == backend["fell_back_to_pytorch"] >= 1
    assert entry.data["fallbacks"]["summary"].startswith("The compile backend openvino never ran")
    assert "The compile backend openvino never ran" in entry.body


def test_openvino_partitions_and_identity(kb: KnowledgeBase) -> None:
    run_openvino("CPU")
    data = only_entry(kb).data
    backend = data["fallbacks"]["compile_backend"]
    assert backend["ran"] is True and backend["fell_back_to_pytorch"] == 0 and backend["partitions"] >= 1
    assert backend["ops_between_partitions"] == {"aten.cumprod.default": 1}
    assert data["versions"]["openvino"].split(".")[0].isdigit()
    # The precision OpenVINO's CPU plugin computes in (bf16 where the CPU has it), not only torch's float32 setting.
    assert data["precision"]["openvino_inference_precision"] in ("bf16", "f16", "f32")


@pytest.mark.parametrize("late", [False, True], ids=["imported-before", "imported-during-the-run"])
def test_openvino_compile_time_includes_its_compile_at_first_execution(kb: KnowledgeBase, late: bool) -> None:
    """OpenVINO converts and compiles each partition when it first runs, after Dynamo's compile and outside torch's
    compilation metrics: compile_s is Dynamo's compile and OpenVINO's, and says so."""
    said = run_openvino("CPU", timed=True, late=late).stdout.split("openvino compile ")[-1].split()
    spent, partitions = float(said[0]), int(said[1])
    assert spent > 0 and partitions >= 1
    data = only_entry(kb).data
    dynamo = sum(frame["compile_s"] for frame in data["compile"]["frames"])
    assert data["compile"]["backend_compile"] == {
        "backend": "openvino",
        "seconds": pytest.approx(spent, abs=0.005),
        "compiles": partitions,
        "when": "at each partition's first execution",
    }
    assert data["timings"]["compile_s"] == pytest.approx(dynamo + spent, abs=0.005)
    assert data["timings"]["compile_source"] == "Dynamo's compilation metrics + OpenVINO's compile at first execution"
