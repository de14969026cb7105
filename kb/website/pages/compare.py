"""Comparisons: per workload, its newest usable runs side by side (kb.answers.compare), and their index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kb.index import site as index_site
from kb.website import answers as site_answers
from kb.website.pages.base import Build, Page, Publisher, digest, href, slug


class ComparePages(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        site = self.site
        workloads = site.compared_workloads()
        incumbent = site.kb.config.answers.incumbent
        index = {
            "workloads": [(w, f"{slug(w)}.html") for w in workloads],
            "board": site_answers.board_view(site.db, incumbent, site.paths, 1, site.kb.config.answers.floor),
        }
        yield Page("compare/index.html", "compare_index.html", digest("compare-index", index), lambda: index)
        # Which run of a group is its newest usable one depends on all of the workload's runs: keyed by
        # their files (and the incumbent, which picks the baseline), worked out only when they changed.
        inputs: dict[str, list[tuple[str, str]]] = {}
        for workload, entry_id, sha in index_site.trend_inputs(site.db):
            inputs.setdefault(workload, []).append((entry_id, sha))
        for workload in workloads:
            path = f"compare/{slug(workload)}.html"
            key = digest("compare", path, incumbent, inputs.get(workload))
            yield Page(path, "compare.html", key, lambda w=workload: self._context(w))

    def _context(self, workload: str) -> dict[str, Any]:
        from kb.answers.compare import compare, newest_usable
        from kb.answers.figures import numerics

        site = self.site
        # As kb compare picks them: never a failed, killed or running run beside the others, nor as the baseline.
        entries, left_out = newest_usable(site.kb, site.db, workload, site.kb.config.answers.incumbent)
        comparison = compare(entries) if len(entries) > 1 else None
        return {
            "workload": workload,
            "entries": [(e, href(site.paths[e.id], 1)) for e in entries],
            "comparison": comparison,
            "rows": site_answers.comparison_rows(comparison) if comparison else [],
            "left_out": left_out,
            "numerics_failed": [e.id for e in entries if numerics(e.data) == "failed"],  # its figures are no result
        }
