"""The words backends use to say an operator fell back to the CPU, torch-free, for a run's warnings and its output.

MPS, and PrivateUse1 backends built on PyTorch's boxed `at::native::cpu_fallback` (TorchNeuron, torch_npu...),
warn "The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on
the CPU"; other texts say "falling back to CPU" or "fallback to cpu" (TorchTPU: "operator 'aten::nonzero' is not
implemented for TPU. Falling back to CPU", on every call), torch_xla's PT_XLA_DEBUG analysis says "Op(s) not lowered:
aten::_ctc_loss, ...", and torch_xla's metrics report, printed by a run, lists one "Counter: aten::<op>" per operator
that ran on the CPU (its `aten::_local_scalar_dense` is `.item()` reading a value back, not a fallback).
"""

from __future__ import annotations

import re
from pathlib import Path

MESSAGE_CHARS = 300
FALLBACK_TEXT = re.compile(
    r"fall(?:s|ing)?[\s-]?back\s+to\s+(?:run\s+on\s+)?(?:the\s+)?cpu|op\(s\) not lowered"
    r"|^\s*Counter: aten::(?!_local_scalar_dense\b)",
    re.I,
)
# Installed packages whose runs can fall back to the CPU even where the entry names no backend (`kb record` alone).
FALLING_BACK_PACKAGES = ("torch-xla", "torch-tpu", "torch-neuronx")
# MPS emits this text with TORCH_WARN_ONCE, and backends that copy it warn once per operator or process, so how
# often it was seen says nothing about how often the operator ran.
ONCE_TEXT = re.compile(r"is not currently supported on the \S+ backend and will fall back to run on the CPU", re.I)
_QUOTED_OP = re.compile(r"operator '([^']+)'")
_ATEN_OP = re.compile(r"aten::\w+(?:\.\w+)?")


def ops_named(text: str) -> list[str | None]:
    """The operators a fallback message names ([None] when it names none)."""
    quoted = _QUOTED_OP.search(text)
    return [quoted.group(1)] if quoted else _ATEN_OP.findall(text) or [None]


def may_fall_back(backend: object, versions: object) -> bool:
    """Whether a run's output is worth searching for CPU fallbacks: its backend is not the CPU, or a backend package
    that falls back was installed where it ran."""
    if str(backend or "cpu") != "cpu":
        return True
    return isinstance(versions, dict) and any(name in versions for name in FALLING_BACK_PACKAGES)


def scan_output(path: Path, most: int = 20) -> list[tuple[int, str]]:
    """(line number, line) of the CPU-fallback messages in a run's captured output, at most `most`."""
    found: list[tuple[int, str]] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if FALLBACK_TEXT.search(line):
                found.append((number, line.strip()[:MESSAGE_CHARS]))
                if len(found) >= most:
                    break
    return found
