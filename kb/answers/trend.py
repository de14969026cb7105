"""A metric or timing across software versions: ordered by PEP 440, with regressions and improvements flagged.

The rule, as benchmark-history tools use it: each version's value (the median of its entries) is held
against the best value of all earlier versions. Worse by more than the threshold (5% by default) is a
regression; better than that best by more than the threshold is an improvement; anything in between is
within the noise band.
"""

from __future__ import annotations

import difflib
import sqlite3
import statistics
from dataclasses import dataclass, field
from typing import Any

from kb.answers.compare import guess_better
from kb.errors import KbError
from kb.index.query import version_key
from kb.index.rows import normalise_package

SPARKS = "▁▂▃▄▅▆▇█"
DEFAULT_THRESHOLD = 0.05


@dataclass
class Point:
    version: str
    value: float
    count: int
    first: str  # recorded dates of the entries behind the point
    last: str
    entries: list[str]
    flag: str = ""  # "regression", "improvement" or ""
    change: float | None = None  # against the best earlier value, as a fraction


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


def trend(
    db: sqlite3.Connection,
    metric: str,
    workload: str,
    *,
    package: str = "torch",
    by: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> Trend:
    if by not in (None, "backend", "mode"):
        raise KbError(f"--by {by!r}: group by backend or mode")
    # INDEXED BY: left to itself SQLite may look each entry's figures up through the by-name indexes,
    # scanning every row of that name for every entry (quadratic: seconds at 10,000 entries).
    rows = db.execute(
        f"SELECT e.id, e.recorded, {'e.' + by if by else 'NULL'}, "
        "COALESCE((SELECT value FROM metrics m INDEXED BY metrics_entry WHERE m.entry_id = e.id AND m.name = ?), "
        "(SELECT seconds FROM timings t INDEXED BY timings_entry WHERE t.entry_id = e.id AND t.name = ?)), "
        "(SELECT version FROM versions v INDEXED BY versions_entry WHERE v.entry_id = e.id AND v.package = ?), "
        "(SELECT better FROM metrics m INDEXED BY metrics_entry WHERE m.entry_id = e.id AND m.name = ?) "
        "FROM entries e WHERE e.workload = ? AND e.kind IN ('run', 'report') ORDER BY e.recorded",
        [metric, metric, normalise_package(package), metric, workload],
    ).fetchall()
    if not rows:
        raise KbError(f"no runs of workload {workload!r}; 'kb ls --kind run' lists the workloads")
    with_value = [row for row in rows if row[3] is not None]
    if not with_value:
        raise KbError(f"no run of {workload!r} has {metric!r}{_nearest(db, metric)}")
    better = next((row[5] for row in with_value if row[5]), None) or guess_better(metric, None) or "lower"
    groups: dict[Any, list[tuple]] = {}
    skipped = 0
    for row in with_value:
        if row[4] is None:
            skipped += 1
            continue
        groups.setdefault(row[2], []).append(row)
    series = [_series(group, rows_, better, threshold) for group, rows_ in sorted(groups.items(), key=_group_key)]
    return Trend(metric, package, better, threshold, series, skipped)


def _series(group: Any, rows: list[tuple], better: str, threshold: float) -> Series:
    by_version: dict[str, list[tuple]] = {}
    for row in rows:
        by_version.setdefault(row[4], []).append(row)
    series = Series(group)
    best: float | None = None
    for version in sorted(by_version, key=version_key):
        found = by_version[version]
        value = statistics.median(row[3] for row in found)
        point = Point(version, value, len(found), found[0][1][:10], found[-1][1][:10], [row[0] for row in found])
        if best is not None and best != 0:
            change = (value - best) / abs(best)
            point.change = round(change, 4)
            worse = change < -threshold if better == "higher" else change > threshold
            improved = change > threshold if better == "higher" else change < -threshold
            point.flag = "regression" if worse else "improvement" if improved else ""
        best = value if best is None else (max(best, value) if better == "higher" else min(best, value))
        series.points.append(point)
    return series


def _group_key(item: tuple) -> str:
    return "" if item[0] is None else str(item[0])


def _nearest(db: sqlite3.Connection, metric: str) -> str:
    names = [row[0] for row in db.execute("SELECT DISTINCT name FROM metrics UNION SELECT DISTINCT name FROM timings")]
    near = difflib.get_close_matches(metric, names, n=3, cutoff=0.4)
    return f"; did you mean {', '.join(near)}?" if near else f"; recorded names: {', '.join(sorted(names)[:12])}"
