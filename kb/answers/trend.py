"""A metric or timing across software versions: ordered by PEP 440, with regressions and improvements flagged.

Only the same program makes one series: runs are split by backend and mode, device count, any shape
setting that differs between them (batch, sequence length, dtype ...: `figures.SHAPE`, as the board and
compare read them; not steps, seeds or warm-up, so re-runs pool), and for compile times by cold or warm
cache; reported figures stand in a series of their own. Local version labels (`2.10.0+cu126`) fold into
their release (the labels stay as detail). Only completed runs count: a failed run's figures are partial.

The rule, as benchmark-history tools use it: each version's value (the median of its entries) is held
against the best value of all earlier versions. Worse by more than the threshold (5% by default) is a
regression; better than that best by more than the threshold is an improvement; anything in between is
within the noise band. One noise rule for all figures: throughput computed from the step times shares
their verdict, and a phase timed once per run (load, compile, first step) is flagged only where both
points hold repeated measurements; otherwise it says "one measurement".
"""

from __future__ import annotations

import difflib
import sqlite3
import statistics
from dataclasses import dataclass, field
from typing import Any

from kb.answers import figures
from kb.answers.compare import guess_better
from kb.errors import KbError
from kb.index import answers
from kb.index.query import version_key

SPARKS = "▁▂▃▄▅▆▇█"
DEFAULT_THRESHOLD = 0.05


@dataclass
class Point:
    version: str  # the release: local labels folded
    value: float
    count: int
    first: str  # recorded dates of the entries behind the point
    last: str
    entries: list[str]
    flag: str = ""  # "regression", "improvement" or ""
    change: float | None = None  # against the best earlier value, as a fraction
    labels: list[str] = field(default_factory=list)  # the versions as recorded (2.10.0+cu126, 2.10.0+cu128)
    note: str = ""  # "one measurement": too few for a flag
    step_s: float | None = None  # the median step time of its entries, which derived figures are judged by


@dataclass
class Series:
    group: str | None
    points: list[Point] = field(default_factory=list)

    def sparkline(self) -> str:
        values = [p.value for p in self.points]
        low, high = min(values), max(values)
        span = (high - low) or 1.0
        return "".join(SPARKS[round((v - low) / span * (len(SPARKS) - 1))] for v in values)


@dataclass
class Trend:
    metric: str
    package: str
    better: str
    threshold: float
    series: list[Series]
    skipped: int  # entries with the metric but without the package's version
    unfinished: int = 0  # runs left out because they did not complete


def trend(
    db: sqlite3.Connection,
    metric: str,
    workload: str,
    *,
    package: str = "torch",
    threshold: float = DEFAULT_THRESHOLD,
) -> Trend:
    rows = answers.trend_rows(db, metric, workload, package)
    if not rows:
        raise KbError(f"no runs of workload {workload!r}; 'kb ls --kind run' lists the workloads")
    with_value = [row for row in rows if row["value"] is not None]
    if not with_value:
        raise KbError(f"no run of {workload!r} has {metric!r}{_nearest(db, metric)}")
    better = next((row["better"] for row in with_value if row["better"]), None) or guess_better(metric, None) or "lower"
    finished = [row for row in with_value if row["kind"] == "report" or row["status"] == "completed"]
    skipped = sum(1 for row in finished if row["version"] is None)
    dated = [row for row in finished if row["version"] is not None]
    shapes = [_shapes(row) for row in dated]
    differing = _differing(shapes)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row, found in zip(dated, shapes, strict=True):
        groups.setdefault(_group(row, found, metric, differing), []).append(row)
    series = [_series(group, found, metric, better, threshold) for group, found in sorted(groups.items())]
    return Trend(metric, package, better, threshold, series, skipped, len(with_value) - len(finished))


def _shapes(row: dict[str, Any]) -> dict[str, Any]:
    """The settings that make a run another program, as the board and compare read them (a dtype given only as
    precision.dtype too); device-count settings are left to the device count, steps, seeds and warm-up to the
    pool."""
    found = figures.shapes({"settings": row["settings"] or {}, "precision": row["precision"]})
    return {name: value for name, value in found.items() if name not in figures.DEVICE_SETTINGS}


def _differing(shapes: list[dict[str, Any]]) -> list[str]:
    """The shape settings whose values differ among the runs."""
    names = sorted({name for found in shapes for name in found})
    return [name for name in names if len({repr(found.get(name)) for found in shapes}) > 1]


def _group(row: dict[str, Any], shapes: dict[str, Any], metric: str, differing: list[str]) -> str:
    """The series a run belongs to: backend · mode, and whatever else makes it another program."""
    data = {"hardware": {"accelerators": row["accelerators"] or []}, "settings": row["settings"] or {},
            "tags": row["tags"] or [], "compile": {"cache": row["cache"]}}  # fmt: skip
    parts = [row["backend"] or "?", *([row["mode"]] if row["mode"] else [])]
    count = figures.devices(data)
    if count > 1:
        parts.append(f"{count} devices")
    parts += [f"{name}={shapes.get(name)}" for name in differing]
    if metric == "compile_s":
        parts.append(figures.compile_kind(data) or "cache unknown")
    return " · ".join(parts) + (" (reported)" if row["source"] == "reported" else "")


def _series(group: str, rows: list[dict[str, Any]], metric: str, better: str, threshold: float) -> Series:
    by_version: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_version.setdefault(figures.release_of(row["version"]), []).append(row)
    series = Series(group)
    derived = metric in figures.THROUGHPUT
    one_off = metric in figures.ONE_OFF
    best: Point | None = None
    for version in sorted(by_version, key=version_key):
        found = by_version[version]
        steps = [row["step_s"] for row in found if row["step_s"] is not None]
        point = Point(
            version, statistics.median(row["value"] for row in found), len(found), found[0]["recorded"][:10],
            found[-1]["recorded"][:10], [row["id"] for row in found],
            labels=sorted({row["version"] for row in found}, key=version_key),
            step_s=statistics.median(steps) if len(steps) == len(found) else None,
        )  # fmt: skip
        if best is not None:
            _flag(point, best, better, threshold, derived, one_off)
        if best is None or _improves(point.value, best.value, better):
            best = point
        series.points.append(point)
    return series


def _flag(point: Point, best: Point, better: str, threshold: float, derived: bool, one_off: bool) -> None:
    if best.value == 0:
        return
    change = (point.value - best.value) / abs(best.value)
    point.change = round(change, 4)
    if one_off and (point.count < 2 or best.count < 2):
        point.note = "one measurement"
        return
    if derived and point.step_s and best.step_s:
        # Computed from the step times: judged by them, so that the two never disagree.
        change, better = (point.step_s - best.step_s) / best.step_s, "lower"
    worse = change < -threshold if better == "higher" else change > threshold
    improved = change > threshold if better == "higher" else change < -threshold
    point.flag = "regression" if worse else "improvement" if improved else ""


def _improves(value: float, best: float, better: str) -> bool:
    return value > best if better == "higher" else value < best


def _nearest(db: sqlite3.Connection, metric: str) -> str:
    names = answers.figure_names(db)
    near = difflib.get_close_matches(metric, names, n=3, cutoff=0.4)
    return f"; did you mean {', '.join(near)}?" if near else f"; recorded names: {', '.join(sorted(names)[:12])}"
