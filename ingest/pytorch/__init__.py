"""Instrumented PyTorch runs: `from ingest.pytorch import run`, or `start` (see docs/instrument.md).

Names load on first use, so that the recorder can read run folders without importing torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CompileTimeout", "Run", "run", "start"]
_HOMES = {"start": "ingest.pytorch.start"}  # the rest live in ingest.pytorch.instrument


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(_HOMES.get(name, "ingest.pytorch.instrument")), name)
    raise AttributeError(f"module 'ingest.pytorch' has no attribute {name!r}")
