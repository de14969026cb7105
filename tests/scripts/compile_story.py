"""A compiled training run that meets what real code meets: `python compile_story.py STEPS`.

The model's forward is compiled (its backward graph compiles lazily, at the first backward()); a helper with
a graph break inside a loop makes Dynamo run that whole frame eagerly; at step 5 a smaller batch makes the
forward recompile, in steady state.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from torch import nn

from ingest.pytorch import run

torch._dynamo.config.automatic_dynamic_shapes = False  # a static recompile at the new batch size
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
torch.manual_seed(0)


def scaled(x: torch.Tensor) -> torch.Tensor:
    for _ in range(2):
        x = x * 0.5
        if x.sum() > 0:  # BREAK: data-dependent, inside a loop
            x = x + 1
    return x


with run(workload="compile-story", backend="cpu", mode="compiled", device="cpu", samples_per_step=16,
         warmup_steps=2) as r:  # fmt: skip
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    forward = torch.compile(model)
    helper = torch.compile(scaled)
    for index in range(steps):
        x = torch.randn(8 if index == 5 else 16, 32)
        with r.step():
            loss = (forward(helper(x)) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        r.log("loss", loss.detach())
print("done")
