"""`python -m bench.device_check [--device DEVICE] [--steps N]`: is kb's capture true on this accelerator?

Run it on a new accelerator host before trusting kb there. A tiny training loop runs under kb's instrumented API
while the script times the same work with timers of its own that kb does not use: CUDA events on CUDA
(`torch.cuda.Event`), torch_xla's own wait (`xm.wait_device_ops`) on XLA, the accelerator's events where torch has
them, else the wall clock after the backend's own synchronize. Each figure is printed with kb's value, the
independent one and their ratio; a ratio far from 1 means that kb's figure is not to be trusted on this host. It
takes well under five minutes, and runs on the CPU too (there both sides use the wall clock).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BATCH = 64
WARMUP = 3


def _timer(device: str) -> tuple[str, Callable[[], Any], Callable[[Any, Any], float]]:
    """(name, mark, seconds between two marks): the independent clock for this device."""
    import torch

    if device == "cuda":

        def cuda_mark() -> Any:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event

        def cuda_seconds(start: Any, end: Any) -> float:
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        return "CUDA events", cuda_mark, cuda_seconds
    if device == "xla":
        import torch_xla.core.xla_model as xm

        def xla_mark() -> float:
            xm.mark_step()
            xm.wait_device_ops()
            return time.perf_counter()

        return "wall clock after xm.wait_device_ops", xla_mark, lambda start, end: end - start
    if device != "cpu":

        def device_mark() -> float:
            torch.accelerator.synchronize()
            return time.perf_counter()

        return "wall clock after torch.accelerator.synchronize", device_mark, lambda start, end: end - start
    return "wall clock", time.perf_counter, lambda start, end: end - start


def _events(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """kb's figures as the run handed them over: the fields it set and the metrics it gave."""
    fields: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    for line in (folder / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "set":
            fields[event["field"]] = event["value"]
        elif event.get("event") == "metric":
            metrics[event["name"]] = event["value"]
    return fields, metrics


def check(device: str, steps: int) -> list[tuple[str, float | None, float | None]]:
    """(figure, kb's value, the independent value) for a tiny training loop on `device`."""
    import torch
    from torch import nn

    from ingest.pytorch import run

    if device == "xla":
        import torch_xla

        target: Any = torch_xla.device()
    else:
        target = device
    name, mark, seconds = _timer(device)
    torch.manual_seed(0)
    own: dict[str, Any] = {"steps": []}
    with run(device=device, samples_per_step=BATCH, warmup_steps=WARMUP) as r:
        began = mark()
        with r.phase("load"):
            model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).to(target)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            x, y = torch.randn(BATCH, 256).to(target), torch.randn(BATCH, 256).to(target)
        own["load_s"] = seconds(began, mark())
        loss = None
        for _ in range(steps):
            began = mark()
            with r.step():
                loss = ((model(x) - y) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            own["steps"].append(seconds(began, mark()))
            r.log("loss", loss.detach())
        own["loss"] = float(loss) if loss is not None else None
    fields, metrics = _events(r.folder)
    steady = own["steps"][WARMUP:]
    step_s = fields.get("timings.step_s") or {}
    print(f"device {device}; kb waits with: {fields.get('timings.device_sync', 'nothing (the CPU)')}")
    print(f"independent timer: {name}; {steps} steps, {WARMUP} of them warm-up")
    return [
        ("load phase (s)", fields.get("timings.load_s"), own["load_s"]),
        ("first step (s)", fields.get("timings.first_step_s"), own["steps"][0]),
        ("steady step, median (s)", step_s.get("median"), statistics.median(steady)),
        ("samples/s (steady)", metrics.get("samples_per_s"), BATCH * len(steady) / sum(steady)),
        ("last loss", metrics.get("loss"), own["loss"]),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.device_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", help="cpu, cuda, xla, mps, or a PrivateUse1 device (default: the accelerator)")
    parser.add_argument("--steps", type=int, default=40, help="training steps (default 40)")
    args = parser.parse_args(argv)
    import torch

    device = args.device
    if device is None:
        current = torch.accelerator.current_accelerator()
        device = current.type if current is not None else "cpu"
    # The run hands its figures over as under `kb record`, into a folder of its own: nothing is recorded into a
    # knowledge base, wherever this runs.
    os.environ["KB_RUN_DIR"] = tempfile.mkdtemp(prefix="kb-device-check-")
    with contextlib.redirect_stderr(io.StringIO()):  # the backend's start-up chatter: not news here
        rows = check(device, args.steps)
    print(f"{'figure':<28}{'kb':>14}{'independent':>14}{'kb / indep.':>14}")
    for label, ours, theirs in rows:
        ratio = f"{ours / theirs:.3f}" if ours is not None and theirs else "n/a"
        print(f"{label:<28}{_shown(ours):>14}{_shown(theirs):>14}{ratio:>14}")
    return 0


def _shown(value: float | None) -> str:
    return "absent" if value is None else f"{value:.6g}"


if __name__ == "__main__":
    sys.exit(main())
