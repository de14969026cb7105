"""What makes two runs' figures comparable, read off an entry's front matter: devices, shapes, the compile's
cache state, the numerics verdict, the headline figure, a version's release. Shared by board, compare, trend."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from kb.model.values import DEVICE_PEAK, DEVICE_PEAK_PHASE, finite_number, metric_nonfinite, nonfinite_word
from kb.text.humanize import unit_of

THROUGHPUT = ("tokens_per_s", "samples_per_s")  # over the steady steps' wall time: measured once per run
STEP_RATES = tuple(f"{name}_median_step" for name in THROUGHPUT)  # the median step's: share the step's verdict
HEADLINES = (*THROUGHPUT, "step_s")  # the board's figure, in order of preference
ONE_OFF = ("wall_s", "load_s", "compile_s", "first_step_s", "warmup_s")  # measured once per run
# Settings that change what a step does (its shapes, its precision): runs that differ in them are other programs.
SHAPE = re.compile(r"batch|seq|len|shape|size|dim|dtype|precision|resolution|image|tokens|layer|hidden|head|vocab")
DEVICE_SETTINGS = ("devices", "world_size", "nproc_per_node", "num_devices")
# Launch times rank against nothing, each other included: how fast work is queued says nothing of how fast it runs,
# and backends (and releases) queue to different depths before they block.
LAUNCH_TIMES = "launch times: not ranked"
LAUNCH_TIMES_WHY = "its figures are launch times, not device times"
# Timings taken on the host whatever the device does: the process's wall time, the compiler's, the runtime's start.
HOST_TIMED = ("wall_s", "compile_s", "runtime_start_s")


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
    """`passed`, `failed` or `unchecked`: a figure that became NaN or infinite fails whatever the check said."""
    if nonfinite(data):
        return "failed"
    section = data.get("numerics")
    verdict = str(section.get("verdict") or "").lower() if isinstance(section, dict) else ""
    return {"pass": "passed", "passed": "passed", "fail": "failed", "failed": "failed"}.get(verdict, "unchecked")


def nonfinite(data: dict[str, Any]) -> str:
    """`loss became NaN at step 5` when a metric or timing of the run is NaN or infinite (the value itself, a
    metric's `nonfinite: nan` beside a null value, or the NaN/Inf counts of its numerics check); empty when every
    figure is a number."""
    for name, metric in sorted((data.get("metrics") or {}).items()):
        word = metric_nonfinite(metric)
        if word:
            step = metric.get("step") if isinstance(metric, dict) else None
            return f"{name} became {word}" + (f" at step {step}" if step is not None else "")
    for name, timing in sorted((data.get("timings") or {}).items()):
        word = nonfinite_word(timing.get("median") if isinstance(timing, dict) else timing)
        if word:
            return f"{name} became {word}"
    section = data.get("numerics")
    if isinstance(section, dict):
        counts = {key: section.get(key) for key in ("nan", "inf", "nan_steps")}
        found = [f"{key.replace('_', ' ')} {n}" for key, n in counts.items() if isinstance(n, int) and n > 0]
        if found:
            return "non-finite values in the checked outputs: " + ", ".join(found)
    return ""


def machine(data: dict[str, Any]) -> tuple[tuple[str, ...], Any, Any]:
    """The hardware a run's figures belong to: its accelerators' names and its host's CPU model and thread count.
    Runs on other hardware are no repeats of each other, whatever their host is called; the same hardware on
    another host is (and reproduces the figure)."""
    hardware = data.get("hardware") if isinstance(data.get("hardware"), dict) else {}
    found = hardware.get("accelerators") if isinstance(hardware.get("accelerators"), list) else []
    names = tuple(sorted(str(one.get("name")) for one in found if isinstance(one, dict) and one.get("name")))
    return names, hardware.get("cpu"), hardware.get("cpu_threads")


def configuration(data: dict[str, Any], *, hardware: bool = True, timing: bool = True) -> tuple[Any, ...]:
    """What runs share to be repeats of one configuration: shapes, device count, hardware (`machine`) and whether
    the times are launch times (never pooled with device times). With `hardware=False`, the same configuration on
    any hardware: the runs that may reproduce a figure; with `timing=False`, whatever the times were taken with:
    runs compared by how they ended, not by their figures. The release is the caller's to match."""
    return (repr(sorted(shapes(data).items())), devices(data), machine(data) if hardware else None,
            launch_times(data) if timing else None)  # fmt: skip


def busy(data: dict[str, Any]) -> bool:
    """Whether the machine was busy with other work while the run ran (hardware.load.busy, set at capture)."""
    load = (data.get("hardware") or {}).get("load")
    return isinstance(load, dict) and load.get("busy") is True


def failure(data: dict[str, Any]) -> str:
    """Why a run's figures rank against nothing, empty when they can: it did not complete (`failed (crash:
    RuntimeError: boom)`, `interrupted`, `killed`; its figures are partial) or its numerics failed (`numerics failed
    (loss became NaN at step 5)`). Such a run is never anyone's baseline. Reports have no status and never fail."""
    status = data.get("status")
    if status not in (None, "completed"):
        section = data.get("failure") if isinstance(data.get("failure"), dict) else {}
        said = ": ".join(str(part) for part in (section.get("class"), _first_line(section.get("message"))) if part)
        return f"{status} ({said})" if said else str(status)
    if numerics(data) == "failed":
        return f"numerics failed ({nonfinite(data) or 'its numerics check failed'})"
    return ""


def _first_line(text: Any, width: int = 100) -> str:
    line = str(text or "").strip().splitlines()[0] if str(text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def stayed(data: dict[str, Any]) -> str:
    """Whether the work stayed on the accelerator: `yes`, `no` or `unknown`."""
    section = data.get("fallbacks")
    value = section.get("stayed_on_device") if isinstance(section, dict) else None
    return "yes" if value is True else "no" if value is False else "unknown"


def launch_times(data: dict[str, Any]) -> bool:
    """Whether the run's times are launch times: nothing waited for the device (capture's `timings.device_sync`
    ends in "launch times"), so a step's time is how long its work took to queue, not to run."""
    sync = (data.get("timings") or {}).get("device_sync")
    return isinstance(sync, str) and sync.endswith("launch times")


def device_timed(name: str) -> bool:
    """Whether a figure's time was taken around device work (a step, a phase, a rate over steps): on a run that
    could not wait for its device, such a figure is a launch time."""
    if name in THROUGHPUT or name in STEP_RATES:
        return True
    return name.endswith("_s") and name not in HOST_TIMED


def ranks_with(data: dict[str, Any], other: dict[str, Any], name: str) -> bool:
    """Whether two runs' figure `name` can be ranked against each other: not where either is a launch time."""
    return not (device_timed(name) and (launch_times(data) or launch_times(other)))


def headline(data: dict[str, Any], name: str | None = None) -> Figure | None:
    """The run's figure `name` (or the first of HEADLINES it has), throughput normalised per device."""
    for wanted in [name] if name else HEADLINES:
        if wanted == "step_s":
            step = (data.get("timings") or {}).get("step_s")
            value = step.get("median") if isinstance(step, dict) else step
            if finite_number(value) is not None:
                return Figure("step_s", float(value), "s", float(value), devices(data), str(data.get("id")))
            continue
        metric = (data.get("metrics") or {}).get(wanted)
        value = metric.get("value") if isinstance(metric, dict) else None
        if finite_number(value) is not None:
            count = devices(data)
            unit = str(metric.get("unit") or unit_of(wanted))
            return Figure(wanted, float(value) / count, unit, float(value), count, str(data.get("id")))
    return None


@cache  # a handful of versions, asked for every run
def release_of(version: str) -> str:
    """A version without its local label (`2.10.0+cu126` -> `2.10.0`): builds of one release order together."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).public
    except InvalidVersion:
        return version


def device_peak_gb(data: dict[str, Any]) -> float | None:
    """A run's peak device memory: the whole run's, else the highest of its phases'."""
    memory = data.get("memory")
    if not isinstance(memory, dict):
        return None
    whole = finite_number(memory.get(DEVICE_PEAK))
    if whole is not None:
        return whole
    phases = [finite_number(v) for k, v in memory.items() if str(k).startswith(DEVICE_PEAK_PHASE)]
    found = [v for v in phases if v is not None]
    return max(found) if found else None


def peak_memory_gb(data: dict[str, Any], on_host: bool) -> float | None:
    """The run's peak memory in GB: its device's (device_peak_gb, or a `peak_memory_gb` metric), else, for a run
    on the host's CPU (`on_host`), the process's peak resident memory."""
    memory = data.get("memory") if isinstance(data.get("memory"), dict) else {}
    metric = (data.get("metrics") or {}).get("peak_memory_gb")
    found = [device_peak_gb(data), metric.get("value") if isinstance(metric, dict) else metric]
    if on_host:
        found.append(memory.get("host_peak_rss_gb"))
    return next((number for number in map(finite_number, found) if number is not None), None)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)
