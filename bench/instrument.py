"""Per-step cost of the instrumentation (`with r.step(): ...` and `r.log(...)`), on the CPU and on the accelerator.

Two figures, each against a baseline measured in the same run:
- the API's own cost: a loop whose step does nothing, instrumented against bare, in microseconds per step, on
  the wall clock and in the thread's CPU time (on a shared machine the wall clock also counts the time the
  process waited for a core); where torch has an accelerator, the same on it, with the backend's wait in place
  (the bare loop waits the same way, so the difference is kb's own);
- a real training loop of about 5 ms a step, instrumented against bare, alternated block by block; the
  target is under 1% added at a 5 ms step.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time

from bench.timing import machine, spread


def _empty_loop(steps: int, instrumented: bool, device: str = "cpu") -> tuple[float, float]:
    """Seconds per step of a loop whose step does nothing: on the wall clock, and in this thread's CPU time, which
    leaves out the time a shared machine gave to other processes. On a device, the bare loop waits for it twice a
    step as kb does, with kb's own wait for that backend."""
    import torch

    from ingest.pytorch import run
    from ingest.pytorch.device import Sync

    value = torch.tensor(1.0)
    if not instrumented:
        wait = Sync(device)
        began, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            wait()
            wait()
        return (time.perf_counter() - began) / steps, (time.thread_time() - cpu) / steps
    with run(device=device, out=tempfile.mkdtemp(prefix="kb-bench-")) as r:
        began, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            with r.step():
                pass
            r.log("loss", value)
        elapsed = (time.perf_counter() - began) / steps, (time.thread_time() - cpu) / steps
    return elapsed


def _training(steps: int, instrumented: bool) -> float:
    """Median seconds per training step of a small MLP, sized to about 5 ms on one CPU thread."""
    import torch
    from torch import nn

    from ingest.pytorch import run

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 512), torch.randn(64, 512)

    def step() -> torch.Tensor:
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    times = []
    if not instrumented:
        for _ in range(steps):
            began = time.perf_counter()
            step()
            times.append(time.perf_counter() - began)
        return statistics.median(times)
    with run(device="cpu", out=tempfile.mkdtemp(prefix="kb-bench-"), warmup_steps=1) as r:
        for _ in range(steps):
            began = time.perf_counter()
            with r.step():
                loss = step()
            r.log("loss", loss)
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def run(repeats: int) -> dict[str, float]:
    import torch

    os.environ.pop("KB_RUN_DIR", None)
    os.environ["KB_HOME"] = ""
    os.chdir(tempfile.mkdtemp(prefix="kb-bench-"))  # no knowledge base around: the runs leave run folders only
    torch.set_num_threads(1)
    empty: dict[str, list[float]] = {"bare": [], "kb": [], "bare CPU": [], "kb CPU": []}
    train: dict[str, list[float]] = {"bare": [], "kb": []}
    load = []
    current = torch.accelerator.current_accelerator()
    device = current.type if current is not None else None
    on_device: dict[str, list[float]] = {"bare": [], "kb": []}
    with contextlib.redirect_stderr(io.StringIO()):  # each run says where its run folder is: not news here
        for _ in range(repeats):
            for name in ("bare", "kb"):
                wall, cpu = _empty_loop(20_000, name == "kb")
                empty[name].append(wall)
                empty[f"{name} CPU"].append(cpu)
                train[name].append(_training(60, name == "kb"))
                if device is not None:
                    on_device[name].append(_empty_loop(2_000, name == "kb", device)[0])
            load.append(os.getloadavg()[0])
    cost_us = (spread(empty["kb"])[0] - spread(empty["bare"])[0]) * 1e6
    cpu_us = (spread(empty["kb CPU"])[0] - spread(empty["bare CPU"])[0]) * 1e6
    bare_step, kb_step = spread(train["bare"])[0], spread(train["kb"])[0]
    print(f"\ninstrumentation cost per step, {repeats} alternated rounds; {machine()}, torch on 1 thread")
    print(f"load average (1 min) over the rounds: {min(load):.1f} to {max(load):.1f}")
    print(f"{'loop':<44}{'median':>12}{'p10':>12}{'p90':>12}")
    for label, data, scale, unit in (
        ("empty step, bare", empty["bare"], 1e6, "us"),
        ("empty step, instrumented", empty["kb"], 1e6, "us"),
        ("empty step, bare (thread CPU time)", empty["bare CPU"], 1e6, "us"),
        ("empty step, instrumented (thread CPU time)", empty["kb CPU"], 1e6, "us"),
        ("MLP training step, bare", train["bare"], 1e3, "ms"),
        ("MLP training step, instrumented", train["kb"], 1e3, "ms"),
    ):
        median, low, high = spread(data)
        print(f"{label:<44}{median * scale:>10.3f}{unit}{low * scale:>10.3f}{unit}{high * scale:>10.3f}{unit}")
    print(f"API cost: {cost_us:.2f} us per step = {cost_us / 5000 * 100:.3f}% of a 5 ms step (target < 1%)")
    print(f"API cost in the thread's CPU time: {cpu_us:.2f} us per step")
    print(f"training loop: instrumented / bare = {kb_step / bare_step:.3f} (step {bare_step * 1e3:.2f} ms)")
    figures = {"step_cost_us": cost_us, "step_cost_cpu_us": cpu_us, "training_ratio": kb_step / bare_step}
    if device is None:
        print("no accelerator here: the per-step cost with a backend's wait in place is measured where there is one")
        return figures
    from ingest.pytorch.device import Sync

    device_us = (spread(on_device["kb"])[0] - spread(on_device["bare"])[0]) * 1e6
    print(f"API cost on {device}, both loops waiting with {Sync(device).method}: {device_us:.2f} us per step")
    return {**figures, "device_step_cost_us": device_us}
