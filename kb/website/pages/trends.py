"""Trends: per workload, each metric across torch versions by backend and mode, as charts and tables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kb.errors import KbError
from kb.index import site as index_site
from kb.website.pages.base import Build, Page, Publisher, digest, slug


class TrendPages(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        workloads = self.site.compared_workloads()
        index = {"workloads": [(w, f"{slug(w)}.html") for w in workloads]}
        yield Page("trends/index.html", "trends_index.html", digest("trends-index", index), lambda: index)
        # A trend page shows what its workload's entries hold: keyed by those files, computed only when they
        # changed (working out every trend to see whether a page changed would cost seconds on every build).
        inputs: dict[str, list[tuple[str, str]]] = {}
        for workload, entry_id, sha in index_site.trend_inputs(self.site.db):
            inputs.setdefault(workload, []).append((entry_id, sha))
        for workload in workloads:
            path = f"trends/{slug(workload)}.html"
            yield Page(
                path, "trends.html", digest("trend", path, inputs.get(workload)), lambda w=workload: self._context(w)
            )

    def _context(self, workload: str) -> dict[str, Any]:
        from kb.answers.trend import trend
        from kb.website.charts import trend_svg

        db = self.site.db
        results = []
        for name in index_site.trended_names(db, workload):
            try:
                result = trend(db, name, workload, package="torch")
            except KbError:
                continue
            if result.series:
                results.append((name, result))
        groups = sorted({s.group or "" for _, r in results for s in r.series})
        colours = {group or None: index for index, group in enumerate(groups)}
        charts = []
        for name, result in results:
            title = f"{name} of {workload} across torch versions, by backend and mode ({result.better} is better)"
            series = [
                {
                    "group": s.group or "all",
                    "points": [(p.version, f"{p.value:.4g}", p.count, p.flag) for p in s.points],
                }
                for s in result.series
            ]
            charts.append({"name": name, "title": title, "svg": trend_svg(result, title, colours), "series": series})
        return {"workload": workload, "charts": charts}
