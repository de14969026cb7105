"""A run's steps as figures, and the stream that keeps them through a kill; torch-free, for the run and the recorder.

The instrumented run appends its steps and logged values to the run folder as it goes, buffered and flushed
every FLUSH_S seconds or FLUSH_STEPS steps, so a run killed with SIGKILL (the kernel's OOM killer) keeps what
it measured up to the last flush, and a `running` entry can show its progress. Two files:

- `steps.bin`: per step, two little-endian float64, its seconds and its end (seconds since the run began). A
  step costs nothing to write this way (formatting a float as text costs about 0.4 µs; copying it, 0.02);
  a record cut short by a kill is left out.
- `steps.jsonl`: one JSON object a line, what is not in every step:

      {"run": {"warmup_steps": 2, "tokens_per_step": 512, "samples_per_step": 16, "rank": 0, "world_size": 1}}
      {"step": 0, "compiled": true}                  # something compiled while step 0 ran
      {"step": 7, "tokens": 480, "samples": 15}       # r.step(tokens=480, samples=15)
      {"log": "loss", "steps": [0, 1, 2], "values": [2.31, 2.17, 2.05]}

Under many ranks, rank N > 0 streams to `steps-rank-N.bin` and `steps-rank-N.jsonl` beside them. The same
functions turn steps into the entry's figures whether they come from the running process or from the stream
of a killed one, so both read alike.
"""

from __future__ import annotations

import json
import os
import sys
from array import array
from pathlib import Path
from typing import IO, Any

# `statistics` is imported by the functions that use it: every recording imports this module, and statistics (with
# fractions) was about 3 ms of `kb record`'s start.

STREAM = "steps.jsonl"
TIMES = "steps.bin"
FLUSH_S = 2.0
FLUSH_STEPS = 10_000
SIGNIFICANT = 6
RECENT_STEPS = 50  # the steps a running run's recent step time is the median of
_RECORD = 16  # bytes per step in the times file: two float64


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.{SIGNIFICANT}g}")


def stream_names(rank: int) -> tuple[str, str]:
    """(events, times) file names: rank 0's are the run's; the other ranks of a job, sharing its folder, keep
    their own."""
    return (STREAM, TIMES) if rank == 0 else (f"steps-rank-{rank}.jsonl", f"steps-rank-{rank}.bin")


class StepStream:
    """Appends to the run folder's stream files; writes only when flushed, never raises into the run."""

    __slots__ = ("_files", "_handles", "failed")

    def __init__(self, folder: Path, header: dict[str, Any], rank: int = 0):
        self._files = tuple(folder / name for name in stream_names(rank))
        self._handles: tuple[IO[str], IO[bytes]] | None = None
        self.failed: str | None = None
        self.write([json.dumps({"run": header}) + "\n"], [], [])

    def write(self, lines: list[str], seconds: list[float], ends: list[float]) -> None:
        """Append these lines and steps, and push them to the kernel: a SIGKILL after this keeps them."""
        if self.failed is not None:
            return
        try:
            if self._handles is None:
                self._handles = (open(self._files[0], "a", encoding="utf-8"), open(self._files[1], "ab"))  # noqa: SIM115
            text, binary = self._handles
            if seconds:
                pairs = array("d", [value for pair in zip(seconds, ends, strict=True) for value in pair])
                if pairs.itemsize != 8:
                    raise ValueError("float64 is not 8 bytes here")
                binary.write(pairs.tobytes() if sys.byteorder == "little" else _swapped(pairs))
                binary.flush()
            if lines:
                text.write("".join(lines))
                text.flush()
        except (OSError, ValueError) as exc:  # a full disk stops the stream, never the run
            self.failed = f"{self._files[0].parent}: {exc}"

    def close(self) -> None:
        for handle in self._handles or ():
            handle.close()
        self._handles = None


def _swapped(pairs: array) -> bytes:
    pairs.byteswap()
    return pairs.tobytes()


def read_stream(folder: Path, rank: int = 0) -> dict[str, Any] | None:
    """What a run's stream holds: its header, steps (in order, as dicts) and logged values; None without one.

    A last record or line cut off by a kill is left out; so is any line that is not the stream's.
    """
    events, times = (folder / name for name in stream_names(rank))
    if not events.is_file():
        return None
    header: dict[str, Any] = {}
    extras: dict[int, dict[str, Any]] = {}
    logs: dict[str, list[tuple[int, Any]]] = {}
    with open(events, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if not isinstance(item, dict):
                continue
            if isinstance(item.get("run"), dict):
                header = item["run"]
            elif isinstance(item.get("step"), int):
                extras.setdefault(item["step"], {}).update(item)
            elif isinstance(item.get("log"), str) and isinstance(item.get("steps"), list):
                values = item.get("values") if isinstance(item.get("values"), list) else []
                logs.setdefault(item["log"], []).extend(zip(item["steps"], values, strict=False))
    pairs = array("d")
    if times.is_file():
        data = times.read_bytes()
        pairs.frombytes(data[: len(data) - len(data) % _RECORD])
        if sys.byteorder != "little":
            pairs.byteswap()
    steps = [
        {**extras.get(index, {}), "step": index, "s": pairs[2 * index], "end": pairs[2 * index + 1]}
        for index in range(len(pairs) // 2)
    ]
    return {"header": header, "steps": steps, "logs": logs, "modified": os.path.getmtime(events)}


def progress(folder: Path) -> dict[str, Any] | None:
    """A running (or killed) run's progress so far, for showing: steps done, time since the run began, the rate
    so far (first steps and compiles included: what the run has done, not its steady rate), the recent step
    time and the last logged values. None without a stream."""
    import statistics

    stream = read_stream(folder)
    if stream is None:
        return None
    steps = stream["steps"]
    times = folder / stream_names(0)[1]
    flushed = max(stream["modified"], os.path.getmtime(times) if times.is_file() else 0.0)
    found: dict[str, Any] = {"steps": len(steps), "flushed_at": flushed}
    if steps:
        elapsed = steps[-1]["end"]
        found["elapsed_s"] = _round(elapsed)
        recent = steps[-RECENT_STEPS:]
        found["recent_steps"] = len(recent)
        found["recent_step_s_median"] = _round(statistics.median(s["s"] for s in recent))
        if elapsed > 0:
            found["rates"] = _rates_so_far(steps, stream["header"], elapsed)
    found["last_logged"] = {
        name: {"step": values[-1][0], "value": values[-1][1]} for name, values in stream["logs"].items() if values
    }
    return found


def _rates_so_far(steps: list[dict[str, Any]], header: dict[str, Any], elapsed: float) -> dict[str, float]:
    """steps/s, and tokens/s and samples/s where every step's size is known, over the time since the run began."""
    rates = {"steps/s": _round(len(steps) / elapsed)}
    for key, unit in (("tokens", "tokens/s"), ("samples", "samples/s")):
        counts = [step.get(key, header.get(f"{key}_per_step")) for step in steps]
        if counts and all(isinstance(count, int) for count in counts):
            rates[unit] = _round(sum(counts) / elapsed)
    return {unit: value for unit, value in rates.items() if value is not None}


def spread(values: list[float]) -> dict[str, Any]:
    import statistics

    ordered = sorted(values)
    if len(ordered) >= 2:
        deciles = statistics.quantiles(ordered, n=10, method="inclusive")
        p10, p90 = deciles[0], deciles[-1]
    else:
        p10 = p90 = ordered[0]
    return {
        "median": _round(statistics.median(ordered)),
        "p10": _round(p10),
        "p90": _round(p90),
        "mean": _round(statistics.fmean(ordered)),
        "min": _round(ordered[0]),
        "max": _round(ordered[-1]),
        "count": len(ordered),
    }


def steady_indices(count: int, warmup_steps: int, compiled: set[int]) -> list[int]:
    """The steps that are steady state: after warm-up, and not one that compiled (a recompile is preparation)."""
    return [index for index in range(warmup_steps, count) if index not in compiled]


def timings(times: list[float], warmup_steps: int, compiled: set[int]) -> dict[str, Any]:
    """first_step_s, warmup_s and step_s (the steady steps' spread) from the steps' seconds."""
    found: dict[str, Any] = {}
    if not times:
        return found
    found["first_step_s"] = _round(times[0])
    warm = times[1:warmup_steps]
    if warm:
        found["warmup_s"] = _round(sum(warm))
    steady = [times[index] for index in steady_indices(len(times), warmup_steps, compiled)]
    if steady:
        found["step_s"] = spread(steady)
    later = sorted(index for index in compiled if index >= warmup_steps)
    if later:
        found["compiling_steps_s"] = _round(sum(times[index] for index in later))
    return found


def throughput(
    times: list[float],
    ends: list[float],
    warmup_steps: int,
    compiled: set[int],
    sizes: dict[int, tuple[int | None, int | None]],
    per_step: tuple[int | None, int | None],
    world_size: int = 1,
) -> dict[str, dict[str, Any]]:
    """tokens_per_s and samples_per_s: what the steady steps did over their wall time, gaps between steps included.

    The steady wall time runs from the start of the first steady step to the end of the last, less the steps kept
    out of steady state (ones that compiled) inside it. `<name>_median_step` is the rate of the median step, the
    figure a run would reach with no time between steps. Under many ranks each figure is this rank's own.
    """
    import statistics

    steady = steady_indices(len(times), warmup_steps, compiled)
    if not steady:
        return {}
    first, last = steady[0], steady[-1]
    wall = ends[last] - (ends[first] - times[first])
    wall -= sum(times[index] for index in compiled if first < index < last)
    median = statistics.median(times[index] for index in steady)
    found: dict[str, dict[str, Any]] = {}
    for position, (name, unit) in enumerate((("tokens_per_s", "tokens/s"), ("samples_per_s", "samples/s"))):
        counts = [sizes.get(index, (None, None))[position] for index in steady]
        counts = [per_step[position] if count is None else count for count in counts]
        if any(count is None for count in counts) or not any(counts):
            continue
        total = sum(counts)  # type: ignore[arg-type]
        extra: dict[str, Any] = {"per_rank": True} if world_size > 1 else {}
        if wall > 0:
            found[name] = {"value": _round(total / wall), "unit": unit, "phase": "steady", **extra}
        if median > 0:
            found[f"{name}_median_step"] = {
                "value": _round(statistics.median(counts) / median),  # type: ignore[type-var]
                "unit": unit,
                "phase": "steady",
                **extra,
            }
    return found


def figures(stream: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(timings, throughput metrics) from a stream read back, as the run would have computed them."""
    header = stream["header"]
    by_index = {step["step"]: step for step in stream["steps"]}
    count = 0
    while count in by_index:  # the steps in order, up to the first gap
        count += 1
    steps = [by_index[index] for index in range(count)]
    times = [float(step["s"]) for step in steps]
    ends = [float(step.get("end") or 0.0) for step in steps]
    compiled = {index for index, step in enumerate(steps) if step.get("compiled")}
    sizes = {index: (step.get("tokens"), step.get("samples")) for index, step in enumerate(steps)}
    warmup = max(int(header.get("warmup_steps") or 1), 1)
    per_step = (header.get("tokens_per_step"), header.get("samples_per_step"))
    found = timings(times, warmup, compiled)
    rates = throughput(times, ends, warmup, compiled, sizes, per_step, int(header.get("world_size") or 1))
    return found, rates
