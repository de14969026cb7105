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

from kb.store import KnowledgeBase

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


def run_openvino(device: str) -> subprocess.CompletedProcess:
    ran = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), device],
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
