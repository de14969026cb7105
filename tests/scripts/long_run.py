"""An instrumented run that goes on until told to stop: `python long_run.py STOP_FILE [MAX_STEPS]`.

Each step trains a small model for real and then pauses 0.2 s, so the stream (flushed every 2 s) has something
to show while the run is still going; the run ends when STOP_FILE exists or after MAX_STEPS steps.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from torch import nn

from ingest.pytorch import run

stop = Path(sys.argv[1])
most = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
torch.manual_seed(0)
with run(workload="long-mlp", backend="cpu", mode="eager", device="cpu", samples_per_step=16, warmup_steps=2) as r:
    with r.phase("load"):
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        target = torch.randn(16, 32)
    for _ in range(most):
        if stop.exists():
            break
        with r.step():
            loss = ((model(torch.randn(16, 32)) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        r.log("loss", loss.detach())
        time.sleep(0.2)
print("done")
