"""A metric or timing across software versions: ordered by PEP 440, with the changes between releases located.

Only the same program makes one series: runs are split by backend and mode, device count, any shape
setting that differs between them (batch, sequence length, dtype ...: `figures.SHAPE`, as the board and
compare read them; not steps, seeds or warm-up, so re-runs pool), and for compile times by cold or warm
cache; reported figures and launch times (a run that could not wait for its device) stand in series of their
own, and a series of launch times is never judged, release against release. Local version labels
(`2.10.0+cu126`) fold into their release (the labels stay as detail). Only completed runs count: a failed
run's figures are partial.

The rule: each release's runs against the previous release's, by the one verdict rule of kb.answers.verdict
(a bootstrap interval of the ratio of medians against the practical floor): slower is a regression, faster an
improvement, and the release before is the last good one. A persistence rule keeps a blip out: a change the
next release undoes (its runs equivalent to, or better than, the last good release's) is not flagged. The
flag and the change printed come from the same figure: a throughput is judged by its own runs, never by the
step times beside it.
"""

from __future__ import annotations

import difflib
import itertools
import sqlite3
import statistics
from dataclasses import dataclass, field
from typing import Any

from kb.answers import figures, verdict
from kb.answers.compare import guess_better
from kb.errors import KbError
from kb.index import answers
from kb.index.query import version_key

SPARKS = "▁▂▃▄▅▆▇█"
LAUNCHED = " · launch times"  # a series of launch times: shown, never judged (figures.LAUNCH_TIMES)


@dataclass
class Point:
    version: str  # the release: local labels folded
    value: float  # the median of its runs
    count: int
    first: str  # recorded dates of the entries behind the point
    last: str
    entries: list[str]
    flag: str = ""  # "regression", "improvement" or ""
    change: float | None = None  # of the median against the previous release's, as a fraction
    labels: list[str] = field(default_factory=list)  # the versions as recorded (2.10.0+cu126, 2.10.0+cu128)
    note: str = ""  # why a change is not flagged: too few runs, within the floor, did not persist
    values: list[float] = field(default_factory=list)  # one per run
    previous: str | None = None  # the release it is judged against (the last good one, for a regression)
    comparison: dict[str, Any] | None = None  # kb.answers.verdict.Verdict against the previous release


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
    floor: float
    series: list[Series]
    skipped: int  # entries with the metric but without the package's version
    unfinished: int = 0  # runs left out because they did not complete


def trend(
    db: sqlite3.Connection,
    metric: str,
    workload: str,
    *,
    package: str = "torch",
    floor: float = verdict.FLOOR,
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
    series = [_series(group, found, better, floor) for group, found in sorted(groups.items())]
    for found in series:
        if found.group and found.group.endswith(LAUNCHED):  # ranked against nothing, each other included
            for point in found.points:
                point.flag, point.change, point.comparison, point.note = "", None, None, figures.LAUNCH_TIMES
    return Trend(metric, package, better, floor, series, skipped, len(with_value) - len(finished))


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
    launched = figures.device_timed(metric) and figures.launch_times({"timings": {"device_sync": row["device_sync"]}})
    return " · ".join(parts) + (" (reported)" if row["source"] == "reported" else "") + (LAUNCHED if launched else "")


def _series(group: str, rows: list[dict[str, Any]], better: str, floor: float) -> Series:
    by_version: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_version.setdefault(figures.release_of(row["version"]), []).append(row)
    series = Series(group)
    for version in sorted(by_version, key=version_key):
        found = by_version[version]
        values = verdict.finite([row["value"] for row in found])
        if not values:
            continue
        series.points.append(Point(
            version, statistics.median(values), len(values), found[0]["recorded"][:10], found[-1]["recorded"][:10],
            [row["id"] for row in found], labels=sorted({row["version"] for row in found}, key=version_key),
            values=values,
        ))  # fmt: skip
    for before, point in itertools.pairwise(series.points):
        _judge(point, before, better, floor)
    for before, point, after in zip(series.points, series.points[1:], series.points[2:], strict=False):
        if point.flag and not _persists(before, after, point.flag, better, floor):
            point.flag, point.note = "", f"{after.version} undid it"
    return series


def _judge(point: Point, before: Point, better: str, floor: float) -> None:
    """The release's runs against the previous release's: the flag and the change from the same figure."""
    judged = verdict.judge(before.values, point.values, higher_is_better=better == "higher", floor=floor)
    point.previous = before.version
    point.comparison = judged.as_dict()
    if before.value:
        point.change = round((point.value - before.value) / abs(before.value), 4)
    point.flag = {"slower": "regression", "faster": "improvement"}.get(judged.verdict, "")
    if not point.flag:
        point.note = judged.verdict if judged.verdict == "equivalent" else judged.reason


def _persists(before: Point, after: Point, flag: str, better: str, floor: float) -> bool:
    """Whether the release after a change still differs from the one before it the same way."""
    judged = verdict.judge(before.values, after.values, higher_is_better=better == "higher", floor=floor)
    return {"regression": "slower", "improvement": "faster"}[flag] == judged.verdict or judged.verdict == (
        "inconclusive")  # fmt: skip


def _nearest(db: sqlite3.Connection, metric: str) -> str:
    names = answers.figure_names(db)
    near = difflib.get_close_matches(metric, names, n=3, cutoff=0.4)
    return f"; did you mean {', '.join(near)}?" if near else f"; recorded names: {', '.join(sorted(names)[:12])}"
