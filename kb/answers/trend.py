"""A metric or timing across software versions: ordered by PEP 440, with the changes between releases located.

Only the same program makes one series, split by the keys kb.answers.changepoints splits by: backend and mode,
device count, every shape setting (batch, sequence length, dtype ...: `figures.SHAPE`, as the board and compare
read them; not steps, seeds or warm-up, so re-runs pool), the hardware (figures.machine) and launch times (a run
that could not wait for its device); for compile times cold or warm cache too, and reported figures stand apart.
The label names only what differs between the series. Local version labels (`2.10.0+cu126`) fold into their
release (the labels stay as detail). Only completed runs count (a failed run's figures are partial), and runs on a
busy machine are left out, as change points leave them out.

The rule is kb.answers.changepoints': E-Divisive means over the series' runs in release order finds where it
changed, and each change is judged by the one verdict rule (kb.answers.verdict) between the runs either side of
it: slower is a regression, faster an improvement, and the release before is the last good one. So `kb trend`
and `kb board --regressions` name the same releases. The flag and the change printed come from the same figure:
a throughput is judged by its own runs, never by the step times beside it. A series of launch times is never
judged, release against release.
"""

from __future__ import annotations

import difflib
import itertools
import sqlite3
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kb.answers import changepoints, figures, verdict
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
    change: float | None = None  # of the median against the previous release's (at a located change, of the runs
    # after it against those before), as a fraction
    labels: list[str] = field(default_factory=list)  # the versions as recorded (2.10.0+cu126, 2.10.0+cu128)
    note: str = ""  # why no change is flagged: too few runs, none located, within the floor
    values: list[float] = field(default_factory=list)  # one per run
    previous: str | None = None  # the release before (the last good one, for a regression)
    comparison: dict[str, Any] | None = None  # kb.answers.verdict.Verdict of a located change: the runs either side


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
    busy: int = 0  # runs left out because the machine was busy with other work


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
        from kb.answers.names import did_you_mean

        raise KbError(f"no runs of workload {workload!r}{did_you_mean(workload, answers.workload_names(db))}")
    with_value = [row for row in rows if row["value"] is not None]
    if not with_value:
        raise KbError(f"no run of {workload!r} has {metric!r}{_nearest(db, metric)}")
    better = next((row["better"] for row in with_value if row["better"]), None) or guess_better(metric, None) or "lower"
    finished = [row for row in with_value if row["kind"] == "report" or row["status"] == "completed"]
    skipped = sum(1 for row in finished if row["version"] is None)
    known = [row for row in finished if row["version"] is not None]
    hardware = answers.hardware_sections(db, [row["id"] for row in known])
    dated = [(row, _data(row, hardware.get(row["id"]) or {})) for row in known]
    calm = [(_key(row, data, metric), row, data) for row, data in dated if not figures.busy(data)]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for key, row, _ in calm:
        groups.setdefault(key, []).append(row)
    labels = _labels(calm)
    series = [_series(labels[key], rows, better, floor) for key, rows in sorted(groups.items())]
    for one in series:
        if one.group.endswith(LAUNCHED):  # ranked against nothing, each other included
            for point in one.points:
                point.flag, point.change, point.comparison, point.note = "", None, None, figures.LAUNCH_TIMES
    return Trend(metric, package, better, floor, series, skipped, len(with_value) - len(finished),
                 len(dated) - len(calm))  # fmt: skip


def _data(row: dict[str, Any], hardware: dict[str, Any]) -> dict[str, Any]:
    """The sections of a run's front matter that place it in a series, from its trend row and its hardware."""
    return {"settings": row["settings"] or {}, "precision": row["precision"], "hardware": hardware,
            "timings": {"device_sync": row["device_sync"]}, "tags": row["tags"] or [],
            "compile": {"cache": row["cache"]}}  # fmt: skip


def _key(row: dict[str, Any], data: dict[str, Any], metric: str) -> tuple[str, ...]:
    """The series a run belongs to: the change points' key, with the cache state for compile times, and reported
    figures apart."""
    timed = figures.device_timed(metric)
    launched = timed and figures.launch_times(data)
    label = changepoints.series_label(row["backend"], row["mode"], data, device_timed=timed)
    return (label, changepoints.hardware(data),
            (figures.compile_kind(data) or "cache unknown") if metric == "compile_s" else "",
            "reported" if row["source"] == "reported" else "", LAUNCHED if launched else "")  # fmt: skip


def _labels(runs: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]]) -> dict[tuple[str, ...], str]:
    """Each series' label (runs: their key, trend row and sections): backend · mode, and whatever else makes it
    another program where the runs differ (the hardware where two series differ in nothing else)."""
    shapes = [_shapes(data) for *_, data in runs]
    differing = [name for name in sorted({name for found in shapes for name in found})
                 if len({repr(found.get(name)) for found in shapes}) > 1]  # fmt: skip
    labels, machines = {}, {}
    for (key, row, data), found in zip(runs, shapes, strict=True):
        parts = [row["backend"] or "?", *([row["mode"]] if row["mode"] else [])]
        count = figures.devices(data)
        if count > 1:
            parts.append(f"{count} devices")
        parts += [f"{name}={found.get(name)}" for name in differing]
        if key[2]:
            parts.append(key[2])
        labels[key] = " · ".join(parts) + (" (reported)" if key[3] else "")
        machines[key] = changepoints.hardware_label(data)
    said = Counter(label + key[4] for key, label in labels.items())
    return {key: label + (f" · {machines[key]}" if said[label + key[4]] > 1 else "") + key[4]
            for key, label in labels.items()}  # fmt: skip


def _shapes(data: dict[str, Any]) -> dict[str, Any]:
    """The settings that make a run another program; device-count settings are left to the device count."""
    return {name: value for name, value in figures.shapes(data).items() if name not in figures.DEVICE_SETTINGS}


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
    _flag(series.points, better, floor)
    return series


def _flag(points: list[Point], better: str, floor: float) -> None:
    """The located changes of the series (kb.answers.changepoints), each flagged on the first release after it."""
    values = [value for point in points for value in point.values]
    releases = [point.version for point in points for _ in point.values]
    found = {
        releases[change.point]: change
        for change in changepoints.located(values, releases, higher_is_better=better == "higher", floor=floor)
    }
    few = len(values) < 2 * verdict.MIN_RUNS
    for before, point in itertools.pairwise(points):
        point.previous = before.version
        if before.value:
            point.change = round((point.value - before.value) / abs(before.value), 4)
        change = found.get(point.version)
        if change is None:
            point.note = (
                f"too few runs: {verdict.MIN_RUNS} on each side give an interval" if few else "no change located"
            )
            continue
        judged = change.judged
        point.comparison, point.change = judged.as_dict(), change.change
        point.flag = {"slower": "regression", "faster": "improvement"}.get(judged.verdict, "")
        if not point.flag:
            point.note = judged.verdict if judged.verdict == "equivalent" else judged.reason


def _nearest(db: sqlite3.Connection, metric: str) -> str:
    names = answers.figure_names(db)
    near = difflib.get_close_matches(metric, names, n=3, cutoff=0.4)
    return f"; did you mean {', '.join(near)}?" if near else f"; recorded names: {', '.join(sorted(names)[:12])}"
