"""A small torch_xla workload on PJRT's CPU device: `python xla_run.py SCENARIO [STEPS]`.

Scenarios: steps (timed steps, each also timed by the script itself with torch_xla's own wait, printed as
`own_step_s=<median>`), ragged (a last batch of another shape, which recompiles), fallbacks (aten::nonzero and
aten::_unique2 on the device, which torch_xla runs on the CPU; prints the metrics report as a run would), plain
(the fallbacks workload with no kb API at all, for `kb record` alone), openxla (torch.compile(backend="openxla")),
logged (a loss logged in each step, and after the last step a value that nothing syncs; prints the run's own
CompileTime over the run's body, `own_compiles=<n> own_compile_s=<s>`, and that value, `pending=<v>`).
With XLA_RUN_CACHE set, torch_xla's persistent compile cache is in that folder.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("PJRT_DEVICE", "CPU")

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

scenario = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
torch.manual_seed(0)
device = torch_xla.device()


def work(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    for _ in range(12):  # enough arithmetic that the device's work, not its launch, is the step
        x = torch.tanh(x @ weight)
    return x


def fallbacks(x: torch.Tensor) -> torch.Tensor:
    kept = torch.nonzero(x > 0)  # data-dependent shapes: torch_xla runs these on the CPU
    unique = torch.unique(x.round())
    return kept.sum() + unique.sum()


if scenario == "plain":
    x = torch.randn(64, 64, device=device)
    for _ in range(steps):
        fallbacks(x)
        torch_xla.sync()
    print(met.metrics_report())
    sys.exit(0)

from ingest.pytorch import run  # noqa: E402

if os.environ.get("XLA_RUN_CACHE"):  # torch_xla's persistent compile cache, set up as a run would
    import torch_xla.runtime as xr

    xr.initialize_cache(os.environ["XLA_RUN_CACHE"])

weight = torch.randn(256, 256, device=device) / 16
options = {"workload": "xla-mlp", "backend": "xla", "device": "xla", "samples_per_step": 256, "warmup_steps": 2}
if scenario == "openxla":
    options["mode"] = "compiled"
own: list[float] = []


def compiles() -> tuple[int, float]:
    data = met.metric_data("CompileTime")
    return (int(data[0]), float(data[1])) if data else (0, 0.0)


with run(**options) as r:
    first = compiles()
    compiled = torch.compile(work, backend="openxla") if scenario == "openxla" else work
    for index in range(steps):
        rows = 100 if scenario == "ragged" and index == steps - 1 else 256
        x = torch.randn(rows, 256).to(device)
        torch_xla.sync()
        xm.wait_device_ops()
        began = time.perf_counter()
        with r.step():
            y = compiled(x, weight)
            if scenario == "fallbacks":
                y = y.sum() + fallbacks(x)
            if scenario == "logged":
                r.log("loss", y.mean())  # synced with the step
        if scenario == "steps":  # the script's own timer, with torch_xla's own wait, for the steps kb timed
            torch_xla.sync()
            xm.wait_device_ops()
            own.append(time.perf_counter() - began)
    if scenario == "logged":
        pending = (y * 3).mean()  # its graph has not run: nothing syncs after the last step
        r.log("pending", pending)
        last = compiles()
        print(f"own_compiles={last[0] - first[0]} own_compile_s={(last[1] - first[1]) * 1e-9:.6f}")
if scenario == "logged":
    print(f"pending={pending.cpu().item()!r}")
if own:
    print(f"own_step_s={statistics.median(own[2:])}")
if scenario == "fallbacks":
    print(met.metrics_report())
