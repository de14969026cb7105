"""How an entry's figures read, for whoever reads them (the index's rows, the answers): a finite number, a NaN or
an infinity however it was written, and the names the memory section gives its peaks."""

from __future__ import annotations

import math
from typing import Any

DEVICE_PEAK = "device_peak_gb"  # memory: the whole run's peak on the device
DEVICE_PEAK_PHASE = DEVICE_PEAK + "_"  # memory: a phase's peak, device_peak_gb_compile ...


def finite_number(value: Any) -> float | None:
    """A finite number, else None: a NaN or infinite figure is never a good figure."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def nonfinite_word(value: Any) -> str:
    """`NaN` or `infinite` for such a float, or its spelling as text (YAML's .nan, JSON's NaN, -Infinity)."""
    if isinstance(value, str):
        text = value.strip().lower().lstrip("+-.")
        return "NaN" if text == "nan" else "infinite" if text in ("inf", "infinity") else ""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "infinite"
    return ""


def metric_nonfinite(metric: Any) -> str:
    """`NaN` or `infinite` where a metric (a bare figure or {value, ...}) became one: its value, or the `nonfinite`
    word a writer that cannot store NaN keeps beside a null value; empty for a number."""
    value = metric.get("value") if isinstance(metric, dict) else metric
    marked = metric.get("nonfinite") if isinstance(metric, dict) else None
    return nonfinite_word(value) or nonfinite_word(marked if isinstance(marked, str) else None)
