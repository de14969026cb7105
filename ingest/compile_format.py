"""The `compile` section's shared vocabulary, torch-free: cache counters and verdicts, graph-break reasons.

Both writers of the section use it: the in-process watch (ingest/pytorch/compile_evidence.py) and the
TORCH_TRACE import (ingest/importers/compile_trace.py), so the two reach the same words the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_REASON_CHARS = 300
CACHE_COUNTERS = {
    "fxgraph_hit": ("inductor", "fxgraph_cache_hit"),
    "fxgraph_miss": ("inductor", "fxgraph_cache_miss"),
    "fxgraph_bypass": ("inductor", "fxgraph_cache_bypass"),
    "aot_hit": ("aot_autograd", "autograd_cache_hit"),
    "aot_miss": ("aot_autograd", "autograd_cache_miss"),
    "aot_bypass": ("aot_autograd", "autograd_cache_bypass"),
}


def break_reason(message: str) -> str:
    """'<graph-break type>: <explanation>' from Dynamo's multi-line message, so counters and logs dedupe.

    The type is the line above "Explanation:": first in a counter's key, but after a line about the
    bytecode being traced ("Encountered graph break when attempting to trace CALL ...") in a log record.
    A message without an explanation gives its first line.
    """
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    at = next((index for index, line in enumerate(lines) if line.startswith("Explanation:")), None)
    if at is None:
        return lines[0][:MAX_REASON_CHARS]
    explanation = lines[at].removeprefix("Explanation:").strip()
    return (f"{lines[at - 1]}: {explanation}" if at else explanation)[:MAX_REASON_CHARS]


def counter_delta(
    before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    delta: dict[str, dict[str, int]] = {}
    for group, values in after.items():
        previous = before.get(group, {})
        # Dynamo can take a graph break back out of the counters (remove_from_stats): never below zero.
        changed = {key: count - previous.get(key, 0) for key, count in values.items() if count > previous.get(key, 0)}
        if changed:
            delta[group] = changed
    return delta


def cache_state(
    counters_before: Mapping[str, Mapping[str, int]], counters_after: Mapping[str, Mapping[str, int]]
) -> str | None:
    """How the FX-graph and AOTAutograd caches served this run, from two snapshots of dynamo's counters.

    "fresh": only misses (compiled cold); "warm": only hits; "mixed": hits and something compiled without a
    hit (a miss or a bypass); "bypass": only bypasses; None: no cache lookup at all.
    """
    return classify(counter_delta(counters_before, counters_after))


def classify(delta: Mapping[str, Mapping[str, int]]) -> str | None:
    counts = {name: delta.get(group, {}).get(key, 0) for name, (group, key) in CACHE_COUNTERS.items()}
    hits = counts["fxgraph_hit"] + counts["aot_hit"]
    misses = counts["fxgraph_miss"] + counts["aot_miss"]
    bypasses = counts["fxgraph_bypass"] + counts["aot_bypass"]
    if hits:
        return "mixed" if misses or bypasses else "warm"
    if misses:
        return "fresh"
    return "bypass" if bypasses else None


def compile_split(frames: list[dict[str, Any]]) -> dict[str, float]:
    """compile_s in parts that add up: first compiles of frames, their recompiles, lazily compiled backward graphs.

    A frame's id is "<frame>/<compile of that frame>" ("0/1" is frame 0's second compile), with "_<attempt>"
    after a restarted compile.
    """
    split = {"forward": 0.0, "recompiles": 0.0, "backward": 0.0}
    for frame in frames:
        number = str(frame.get("id") or "").partition("/")[2].partition("_")[0]
        recompile = number not in ("", "0") if number else bool(frame.get("recompile_reason"))
        split["recompiles" if recompile else "forward"] += frame.get("compile_s") or 0.0
        split["backward"] += frame.get("backward_s") or 0.0
    return {name: float(f"{seconds:.6g}") for name, seconds in split.items()}
