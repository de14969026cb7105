"""Instrumented PyTorch runs: `from ingest.pytorch import run` (see ingest/pytorch/instrument.py, docs/instrument.md).

Names load on first use, so that the recorder can read run folders without importing torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CompileTimeout", "Run", "run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from importlib import import_module

        return getattr(import_module("ingest.pytorch.instrument"), name)
    raise AttributeError(f"module 'ingest.pytorch' has no attribute {name!r}")
