"""A small instrumented training script for the tests: `python instrumented.py SCENARIO [STEPS]`.

Scenarios: eager, compiled, graph_break, oom, reject (a compile backend that refuses an operator),
budget (a compile budget the first call cannot meet), sigterm (stops itself half way), numerics,
ranks (under torchrun), rank_dies (rank 1 exits mid-run under torchrun), sigkill (slow steps, then
SIGKILLs itself at step 10), load_fails (raises inside the load phase), tokens (r.step(tokens=n), with
a pause between steps; prints the steady steps' own wall time), claims_compiled (mode compiled, nothing
compiled).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time
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

mode = "compiled" if scenario in ("compiled", "graph_break", "reject", "budget", "claims_compiled") else "eager"
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
        if scenario == "load_fails":
            raise FileNotFoundError("checkpoint/model.pt: no such file")
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
    steady_began = steady_ended = 0.0
    for index in range(steps):
        x = torch.randn(16, 32)
        if scenario == "sigterm" and index == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        if scenario == "rank_dies" and index == 6 and r.rank == 1:
            os._exit(3)
        if scenario == "sigkill" and index == 10:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer does
        if scenario in ("sigkill", "rank_dies"):
            time.sleep(0.5)  # slow steps: the stream flushes every 2 s
        if scenario == "tokens":
            time.sleep(0.02)  # the data loader's share of each step, outside r.step()
            if index == 2:
                steady_began = time.perf_counter()
        with r.step(tokens=100 + index) if scenario == "tokens" else r.step():
            if scenario == "oom" and index == 3:
                x = x + torch.empty(2**40, dtype=torch.uint8).sum()  # 1 TiB: past the address-space limit
            loss = step(x)
        steady_ended = time.perf_counter()
        r.log("loss", loss.sum() if loss.dim() else loss)
    if scenario == "tokens":
        print(f"steady tokens {sum(100 + i for i in range(2, steps))} in {steady_ended - steady_began:.6f} s")
    if scenario == "graph_break":
        step(torch.randn(4, 32))  # a new shape: a recompile
    r.audit(model, model(torch.randn(2, 32)))
    if scenario == "numerics":
        out = model(torch.ones(4, 32))
        r.check_numerics(out, out + 1e-3 * torch.arange(out.numel()).reshape(out.shape))
print(f"done {scenario}")
