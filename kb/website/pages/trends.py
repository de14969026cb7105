"""Trends: per workload, each metric across the releases of torch and of each backend's own package its runs
record (torch-neuronx, torch-xla, openvino ...), by backend and mode, as charts and tables."""

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
        # A trend page shows what its workload's entries hold, judged with the floor: keyed by those files and the
        # floor, computed only when they changed (working out every trend to see whether a page changed would cost
        # seconds on every build).
        inputs: dict[str, list[tuple[str, str]]] = {}
        for workload, entry_id, sha in index_site.trend_inputs(self.site.db):
            inputs.setdefault(workload, []).append((entry_id, sha))
        floor = self.site.kb.config.answers.floor
        for workload in workloads:
            path = f"trends/{slug(workload)}.html"
            key = digest("trend", path, floor, inputs.get(workload))
            yield Page(path, "trends.html", key, lambda w=workload: self._context(w, floor))

    def _context(self, workload: str, floor: float) -> dict[str, Any]:
        from kb.answers.trend import trend
        from kb.website.charts import trend_svg

        db = self.site.db
        names = index_site.trended_names(db, workload)
        results = []
        for package in release_packages(index_site.workload_packages(db, workload)):
            for name in names:
                try:
                    result = trend(db, name, workload, package=package, floor=floor)
                except KbError:
                    continue
                if result.series:
                    results.append((package, name, result))
        groups = sorted({s.group or "" for *_, r in results for s in r.series})
        colours = {group or None: index for index, group in enumerate(groups)}
        sections: dict[str, list[dict[str, Any]]] = {}
        for package, name, result in results:
            title = f"{name} of {workload} across {package} versions, by backend and mode ({result.better} is better)"
            series = [
                {
                    "group": s.group or "all",
                    "points": [(p.version, f"{p.value:.4g}", p.count, p.flag) for p in s.points],
                }
                for s in result.series
            ]
            chart = {"name": name, "title": title, "svg": trend_svg(result, title, colours), "series": series}
            sections.setdefault(package, []).append(chart)
        return {"workload": workload, "sections": list(sections.items()), "floor": f"{floor:.0%}"}


def release_packages(recorded: list[tuple[str | None, str]]) -> list[str]:
    """The packages whose releases a workload's trends follow: torch, and each backend's own package, the first of
    its packages its runs record (torch-neuronx for neuron, torch-xla for xla, openvino ...), as the board and
    `kb board --regressions` take a backend's release."""
    from kb.answers.board import BACKEND_PACKAGES

    by_backend: dict[str, set[str]] = {}
    for backend, package in recorded:
        by_backend.setdefault(backend or "", set()).add(package)
    own = set()
    for backend, packages in by_backend.items():
        own |= {next((p for p in BACKEND_PACKAGES.get(backend, (backend,)) if p in packages), "torch")}
    return ["torch", *sorted(own - {"torch"})]
