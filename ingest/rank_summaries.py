"""Each rank's summary file in the run folder, and the entry's `ranks` section built from them (no torch needed).

Each rank writes its summary to `ranks/rank-<N>.json` in the run folder, at start, as it goes and at the end,
so a rank that dies still leaves what it knew. The recorder builds the `ranks` section from the files when
rank 0 never got that far; rank 0 builds it from what it gathered (ingest/pytorch/ranks.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb.store import atomic

RANKS_FOLDER = "ranks"


def write_summary(folder: Path, summary: dict[str, Any]) -> None:
    target = folder / RANKS_FOLDER / f"rank-{summary['rank']}.json"
    # A reader never sees half a summary. No fsync: it is written again at each flush while the run goes on.
    atomic.write_text(target, json.dumps(summary, default=str), durable=False)


def read_summaries(folder: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted((folder / RANKS_FOLDER).glob("rank-*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return found


def section(summaries: list[dict[str, Any]], world_size: int) -> dict[str, Any]:
    """The entry's `ranks` section: who reported, who is missing, the slowest rank and the spread."""
    reported = sorted(summaries, key=lambda s: s.get("rank", 0))
    ranks = {s.get("rank") for s in reported}
    medians = {s["rank"]: s["step_s_median"] for s in reported if isinstance(s.get("step_s_median"), (int, float))}
    out: dict[str, Any] = {
        "world_size": world_size,
        "reported": len(reported),
        "missing": [r for r in range(world_size) if r not in ranks],
        "per_rank": reported,
    }
    if medians:
        slowest = max(medians, key=medians.__getitem__)
        fastest = min(medians.values())
        out["slowest_rank"] = slowest
        out["step_s_median_slowest"] = medians[slowest]
        import statistics  # here: with fractions, about 3 ms of `kb record`'s start

        out["step_s_median_of_ranks"] = statistics.median(medians.values())
        out["spread"] = round(medians[slowest] / fastest, 4) if fastest else None
    unfinished = [s.get("rank") for s in reported if s.get("status") != "completed"]
    if unfinished:
        out["unfinished"] = unfinished
    return out
