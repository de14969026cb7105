"""What makes two runs' figures comparable, read off an entry's front matter: devices, shapes, the compile's
cache state, the numerics verdict, the headline figure, a version's release. Shared by board, compare, trend."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from kb.humanize import unit_of

THROUGHPUT = ("tokens_per_s", "samples_per_s")  # over the steady steps' wall time: measured once per run
STEP_RATES = tuple(f"{name}_median_step" for name in THROUGHPUT)  # the median step's: share the step's verdict
HEADLINES = (*THROUGHPUT, "step_s")  # the board's figure, in order of preference
ONE_OFF = ("wall_s", "load_s", "compile_s", "first_step_s", "warmup_s")  # measured once per run
# Settings that change what a step does (its shapes, its precision): runs that differ in them are other programs.
SHAPE = re.compile(r"batch|seq|len|shape|size|dim|dtype|precision|resolution|image|tokens|layer|hidden|head|vocab")
DEVICE_SETTINGS = ("devices", "world_size", "nproc_per_node", "num_devices")


@dataclass
class Figure:
    """A run's headline figure: throughput per device (with its unit) or the median step time."""

    name: str
    value: float  # per device for throughput
    unit: str
    total: float  # as recorded
    devices: int
    entry: str


def devices(data: dict[str, Any]) -> int:
    """How many accelerators the run used: the hardware's count, else a device-count setting, else one."""
    found = (data.get("hardware") or {}).get("accelerators") or []
    counts = [a.get("count") for a in found if isinstance(a, dict)]
    total = sum(c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else 1 for c in counts)
    if total:
        return total
    settings = data.get("settings") or {}
    for name in DEVICE_SETTINGS:
        value = settings.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 1


@cache  # few distinct setting names, asked about for every run
def _is_shape(name: str) -> bool:
    return SHAPE.search(name.lower()) is not None


def shapes(data: dict[str, Any]) -> dict[str, Any]:
    """The settings that change what a step computes (batch, sequence length, dtype ...)."""
    settings = data.get("settings") or {}
    found = {name: value for name, value in settings.items() if _is_shape(name)}
    precision = (data.get("precision") or {}).get("dtype") if isinstance(data.get("precision"), dict) else None
    if precision is not None and "dtype" not in found:
        found["dtype"] = precision
    return found


def shape_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """`batch 8 vs 16` for each shape setting (`shapes` of two runs) the two do not share."""
    return [f"{name} {_text(a.get(name))} vs {_text(b.get(name))}" for name in sorted(a.keys() | b.keys())
            if a.get(name) != b.get(name)]  # fmt: skip


def compile_kind(data: dict[str, Any]) -> str | None:
    """`cold` or `warm`, from the tags people give (cold/warm) or the compile's cache state; None otherwise."""
    tags = set(data.get("tags") or [])
    if "cold" in tags or "warm" in tags:
        return "cold" if "cold" in tags else "warm"
    cache = (data.get("compile") or {}).get("cache") if isinstance(data.get("compile"), dict) else None
    return {"fresh": "cold", "cold": "cold", "warm": "warm"}.get(str(cache)) if cache else None


def numerics(data: dict[str, Any]) -> str:
    """`passed`, `failed` or `unchecked`."""
    section = data.get("numerics")
    verdict = str(section.get("verdict") or "").lower() if isinstance(section, dict) else ""
    return {"pass": "passed", "passed": "passed", "fail": "failed", "failed": "failed"}.get(verdict, "unchecked")


def stayed(data: dict[str, Any]) -> str:
    """Whether the work stayed on the accelerator: `yes`, `no` or `unknown`."""
    section = data.get("fallbacks")
    value = section.get("stayed_on_device") if isinstance(section, dict) else None
    return "yes" if value is True else "no" if value is False else "unknown"


def headline(data: dict[str, Any], name: str | None = None) -> Figure | None:
    """The run's figure `name` (or the first of HEADLINES it has), throughput normalised per device."""
    for wanted in [name] if name else HEADLINES:
        if wanted == "step_s":
            step = (data.get("timings") or {}).get("step_s")
            value = step.get("median") if isinstance(step, dict) else step
            if _number(value) is not None:
                return Figure("step_s", float(value), "s", float(value), devices(data), str(data.get("id")))
            continue
        metric = (data.get("metrics") or {}).get(wanted)
        value = metric.get("value") if isinstance(metric, dict) else None
        if _number(value) is not None:
            count = devices(data)
            unit = str(metric.get("unit") or unit_of(wanted))
            return Figure(wanted, float(value) / count, unit, float(value), count, str(data.get("id")))
    return None


def release_of(version: str) -> str:
    """A version without its local label (`2.10.0+cu126` -> `2.10.0`): builds of one release order together."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).public
    except InvalidVersion:
        return version


def _number(value: Any) -> float | None:
    """A finite number: a diverged run's NaN or infinity is no figure to judge by."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)
