"""Figures as people read them: 14,754 tokens/s, 27 min 17 s, 3.2 h, 1.2 GB. Only for the terminal;
`--json` and `--csv` keep full precision.

The `humanize` package was weighed: its durations are prose ("27 minutes and 17 seconds") and it knows no
rate units, while Python's format specification already gives thousands separators; so a few functions.
"""

from __future__ import annotations

import math
import re
from typing import Any

_SIZES = ("B", "kB", "MB", "GB", "TB", "PB")


def number(value: Any) -> str:
    """A plain figure: whole thousands with separators, smaller ones to four significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    if value == 0:
        return "0"
    if abs(value) < 0.001:
        return f"{value:.3g}"
    return _sig(value, 4)


def duration(seconds: Any) -> str:
    """A span of time in the unit a person would say: 35 ms, 19.2 s, 27 min 17 s, 3.2 h, 2.5 d."""
    if seconds is None:
        return "-"
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds):
        return str(seconds)
    if seconds < 0:
        return "-" + duration(-seconds)
    if seconds < 1e-3:
        return f"{_sig(seconds * 1e6)} µs"
    if seconds < 1:
        return f"{_sig(seconds * 1e3)} ms"
    if seconds < 60:
        return f"{_sig(seconds)} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def size(n_bytes: Any) -> str:
    """Bytes in decimal units, as disks and memory specs are quoted: 132 B, 2.3 kB, 1.2 GB."""
    if n_bytes is None:
        return "-"
    if not isinstance(n_bytes, (int, float)) or isinstance(n_bytes, bool) or not math.isfinite(n_bytes):
        return str(n_bytes)
    value, unit = float(n_bytes), _SIZES[0]
    for unit in _SIZES:
        if abs(value) < 999.5 or unit == _SIZES[-1]:
            break
        value /= 1000
    return f"{value:.0f} {unit}" if unit == "B" else f"{_sig(value, 2 if abs(value) < 10 else 3)} {unit}"


def quantity(value: Any, unit: str | None) -> str:
    """A figure with its unit; seconds and bytes become the larger units that read best."""
    if unit in ("s", "seconds", "sec"):
        return duration(value)
    if unit in ("B", "bytes"):
        return size(value)
    if unit == "GB" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return size(value * 1e9)  # 0.335 GB reads as 335 MB
    text = number(value)
    return f"{text} {unit}" if unit and value is not None else text


def unit_of(name: str) -> str | None:
    """The unit a field's name implies, rates first: `tokens_per_s` (and `tokens_per_s_median_step`) is
    tokens/s, not seconds; then `*_s` seconds, `*_gb` gigabytes (as kb stores memory), `*bytes` bytes."""
    rate = re.fullmatch(r"(\w+?)_per_s(?:_\w+)?", name)
    if rate:
        return f"{rate.group(1)}/s"
    if name.endswith("_s") or name in ("s", "seconds"):
        return "s"
    if name.endswith("_gb"):
        return "GB"
    if name.endswith("bytes"):
        return "B"
    return None


def field(name: str, value: Any, unit: str | None = None) -> str:
    """A figure named by its field, in the unit given (a metric's own) or else the one its name implies."""
    return quantity(value, unit or unit_of(name))


def _sig(value: float, digits: int = 3) -> str:
    """`digits` significant digits without exponent or trailing zeros: 19.177 -> 19.2, 34.70 -> 34.7."""
    if value == 0:
        return "0"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{places}f}".rstrip("0").rstrip(".") if places else f"{value:.0f}"
