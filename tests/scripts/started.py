"""A module-level training script using `ingest.pytorch.start` (no `with` block): `python started.py SCENARIO`.

Scenarios: finish (calls r.finish()), exit (never calls it: the process's end finishes the run), raise (an
uncaught error at step 5), sigterm (stopped by SIGTERM at step 5). The lines marked `# kb` are all the
instrumentation the script has; the test counts them against what docs/instrument.md shows.
"""

import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from torch import nn

import ingest.pytorch  # kb

scenario = sys.argv[1]
torch.manual_seed(0)
r = ingest.pytorch.start(workload="test-mlp", mode="eager", samples_per_step=16, warmup_steps=2)  # kb
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
target = torch.randn(16, 32)
for index in range(10):
    if scenario == "sigterm" and index == 5:
        os.kill(os.getpid(), signal.SIGTERM)
    with r.step():  # kb
        loss = ((model(torch.randn(16, 32)) - target) ** 2).mean()
        if scenario == "raise" and index == 5:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    r.log("loss", loss.detach())  # kb
if scenario == "finish":
    r.finish()  # kb
    print("after finish", file=sys.stderr)
print(f"done {scenario}")
