"""A run's stored curves: the `run/metric-<name>.txt` attachments the instrumentation writes, one value a line."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

MAX_POINTS = 400  # a chart's line needs no more; a run of 100,000 steps is drawn from every 250th
MAX_BYTES = 16_000_000  # a curve file larger than this is not read for a chart
_CURVE = re.compile(r"(?:^|/)metric-([A-Za-z0-9_.-]+)\.txt$")


def curves(entries: Path, attachments: list[dict[str, Any]]) -> list[tuple[str, list[float], int, int]]:
    """(metric name, values, stride, steps) for each curve attached; every `stride`-th of `steps` values."""
    found = []
    for item in attachments:
        match = _CURVE.search(item.get("source") or "")
        if not match:
            continue
        values = _read(entries / item["source"])
        if len(values) < 2 or not any(math.isfinite(value) for value in values):
            continue
        stride = -(-len(values) // MAX_POINTS)
        found.append((match[1], values[::stride], stride, len(values)))
    return found


def _read(path: Path) -> list[float]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return []
        lines = path.read_text("utf-8", errors="replace").split()
    except OSError:
        return []
    values = []
    for line in lines:
        try:
            values.append(float(line))
        except ValueError:
            values.append(math.nan)  # a line that is not a number: a gap in the line, not a stop
    return values
