"""torch_xla's own metrics, as deltas over a stretch of the run (a phase, the steps, the whole run).

`torch_xla.debug.metrics` keeps process-wide metrics: `metric_data(name)` is (TOTAL_SAMPLES, ACCUMULATOR,
SAMPLES), where the samples are a circular buffer (only the last few are kept) while the total and the
accumulator count everything, so only deltas of those two say what one stretch did. Timed metrics
(`CompileTime`, `ExecuteTime`, `TransferToDeviceTime`, `TransferFromDeviceTime`) accumulate nanoseconds;
counters (`CachedCompile`, `MarkStep`, and the `aten::*` CPU fallbacks, read in fallbacks.py) come from
`counter_value(name)`. Read only when the run already imported torch_xla; never raises.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

TIMED = ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime")
COUNTERS = ("CachedCompile", "MarkStep")
NS = 1e-9


def snapshot() -> dict[str, tuple[int, float]] | None:
    """(total samples, accumulator) per timed metric and (value, 0) per counter; None without torch_xla."""
    if "torch_xla" not in sys.modules:
        return None
    try:
        metrics = importlib.import_module("torch_xla.debug.metrics")
        found: dict[str, tuple[int, float]] = {}
        names = set(metrics.metric_names())
        for name in TIMED:
            data = metrics.metric_data(name) if name in names else None
            if data is not None:
                found[name] = (int(data[0]), float(data[1]))
        counters = set(metrics.counter_names())
        for name in COUNTERS:
            if name in counters:
                found[name] = (int(metrics.counter_value(name) or 0), 0.0)
        return found
    except Exception:  # a torch_xla without these calls: no figures, same run
        return None


def delta(before: dict[str, tuple[int, float]] | None, after: dict[str, tuple[int, float]] | None) -> dict[str, Any]:
    """What happened between two snapshots: counts, and seconds for timed metrics (`CompileTime_s`)."""
    if after is None:
        return {}
    before = before or {}
    found: dict[str, Any] = {}
    for name, (count, accumulated) in after.items():
        was_count, was_accumulated = before.get(name, (0, 0.0))
        if count < was_count:  # cleared (clear_metrics) in between: all it holds came since
            was_count, was_accumulated = 0, 0.0
        if count - was_count <= 0:
            continue
        found[name] = count - was_count
        if name in TIMED:
            found[f"{name}_s"] = round((accumulated - was_accumulated) * NS, 6)
    return found
