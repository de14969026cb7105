"""A compiled run with the graph breaks and recompiles real code has: `python compile_sites.py`.

`forward` breaks at two print() sites and at a logger call cached with functools.lru_cache (as transformers'
`logger.warning_once`); every step brings a new batch size, so each of its frames (the function and the two
resumed after the breaks) recompiles; `halved` breaks inside a loop, so Dynamo runs that whole frame eagerly.
Dynamo's own "eager" backend: its graphs and guards are what any backend gets, without a code generator's time.
"""

from __future__ import annotations

import functools
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch

from ingest.pytorch import run

torch._dynamo.config.automatic_dynamic_shapes = False  # a static recompile at each new batch size
logger = logging.getLogger("compile_sites")


@functools.lru_cache(None)
def warning_once(message: str) -> None:
    logger.warning(message)


def forward(x: torch.Tensor) -> torch.Tensor:
    x = x * 2
    print("scaled")  # SITE print 1
    warning_once("forward is experimental")  # SITE warning_once
    x = x + 1
    print("shifted")  # SITE print 2
    return x.relu()


def halved(x: torch.Tensor) -> torch.Tensor:
    for _ in range(2):
        x = x * 0.5
        if x.sum() > 0:  # SITE loop
            x = x + 1
    return x


with run(workload="compile-sites", backend="cpu", mode="compiled", device="cpu", warmup_steps=1) as r:
    compiled_forward = torch.compile(forward, backend="eager")
    compiled_halved = torch.compile(halved, backend="eager")
    for batch in (4, 5, 6, 7):
        with r.step():
            compiled_halved(compiled_forward(torch.ones(batch, 3)))
