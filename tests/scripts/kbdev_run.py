"""An instrumented run on the kbdev PrivateUse1 test device: `python kbdev_run.py SCENARIO [STEPS]`.

Scenarios: native (only add.Tensor, which kbdev implements), logged (native, and each step's result logged as a
tensor on the device, which kb reads back), warned_before (a linear layer, whose addmm falls back to the CPU, runs
once before the run starts, so its once-per-process warning comes before the watch).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch

from ingest.pytorch import run

HELPER = Path(__file__).resolve().parents[1] / "privateuse1" / "device.py"
spec = importlib.util.spec_from_file_location("kb_test_privateuse1_device", HELPER)
assert spec and spec.loader
helper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(helper)
device = helper.load()

scenario = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(3, 4).to(device)
if scenario == "warned_before":
    model(x)  # the addmm fallback warns here, once for the whole process

with run(workload="kbdev-test", backend=device, mode="eager", device=device, samples_per_step=3, warmup_steps=2) as r:
    with r.phase("load"):
        ones = torch.ones(3, 4).to(device)
    for _ in range(steps):
        with r.step():
            y = model(x) if scenario == "warned_before" else x + ones
        r.log("loss", y[0, 0] if scenario == "logged" else 1.0)
    r.audit(model if scenario == "warned_before" else None, y)
print(f"done {scenario}")
