"""A small instrumented training script for the tests: `python instrumented.py SCENARIO [STEPS]`.

Scenarios: eager, compiled, graph_break, oom, reject (a compile backend that refuses an operator),
budget (a compile budget the first call cannot meet), sigterm (stops itself half way), numerics,
ranks (under torchrun), rank_dies (rank 1 exits mid-run under torchrun).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch
from torch import nn

from ingest.pytorch import run

scenario = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
torch.manual_seed(0)


def refuse_mul(graph: torch.fx.GraphModule, example_inputs: list) -> object:
    """A compile backend that, like a real one missing a lowering, rejects an operator."""
    for node in graph.graph.nodes:
        if node.op == "call_function" and "mul" in str(node.target):
            raise NotImplementedError(f"this backend has no lowering for {node.target}")
    return graph.forward


def with_branch(x: torch.Tensor) -> torch.Tensor:
    y = torch.relu(x) * 2
    if y.sum() > 0:  # data-dependent: a graph break
        return y + 1
    return y - 1


if scenario in ("ranks", "rank_dies"):
    import torch.distributed as dist

    dist.init_process_group("gloo")

mode = "compiled" if scenario in ("compiled", "graph_break", "reject", "budget") else "eager"
options = {
    "workload": "test-mlp",
    "backend": "cpu",
    "mode": mode,
    "device": "cpu",
    "samples_per_step": 16,
    "tokens_per_step": 16 * 32,
    "warmup_steps": 2,
    "settings": {"batch": 16, "scenario": scenario},
}
if scenario == "budget":
    options["compile_budget_s"] = 0.05

with run(**options) as r:
    with r.phase("load"):
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        target = torch.randn(16, 32)

    def train_step(x: torch.Tensor) -> torch.Tensor:
        loss = ((model(x) - target) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    step = train_step
    if scenario in ("compiled", "budget"):
        step = torch.compile(train_step)
    elif scenario == "reject":
        step = torch.compile(lambda x: model(x) * 3, backend=refuse_mul)
    elif scenario == "graph_break":
        step = torch.compile(with_branch)
    if scenario == "oom":
        resource.setrlimit(resource.RLIMIT_AS, (8 * 1024**3, 8 * 1024**3))
    for index in range(steps):
        x = torch.randn(16, 32)
        if scenario == "sigterm" and index == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        if scenario == "rank_dies" and index == 4 and r.rank == 1:
            os._exit(3)
        with r.step():
            if scenario == "oom" and index == 3:
                x = x + torch.empty(2**40, dtype=torch.uint8).sum()  # 1 TiB: past the address-space limit
            loss = step(x)
        r.log("loss", loss.sum() if loss.dim() else loss)
    if scenario == "graph_break":
        step(torch.randn(4, 32))  # a new shape: a recompile
    r.audit(model, model(torch.randn(2, 32)))
    if scenario == "numerics":
        out = model(torch.ones(4, 32))
        r.check_numerics(out, out + 1e-3 * torch.arange(out.numel()).reshape(out.shape))
print(f"done {scenario}")
