"""Comparisons: per workload, its newest usable runs side by side (kb.answers.compare), and their index."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from kb.index.query import newest_per_group
from kb.website import answers as site_answers
from kb.website.pages.base import Build, Page, Publisher, digest, href, slug


class ComparePages(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        site = self.site
        workloads = site.compared_workloads()
        index = {
            "workloads": [(w, f"{slug(w)}.html") for w in workloads],
            "board": site_answers.board_view(site.db, site.kb.config.answers.incumbent, site.paths, 1),
        }
        yield Page("compare/index.html", "compare_index.html", digest("compare-index", index), lambda: index)
        for workload in workloads:
            rows = [(row["id"], row["sha256"]) for row in newest_per_group(site.db, workload)]
            path = f"compare/{slug(workload)}.html"
            context = partial(self._context, rows, workload)
            yield Page(path, "compare.html", digest("compare", path, rows), context)

    def _context(self, rows: list[tuple[str, str]], workload: str) -> dict[str, Any]:
        from kb.answers.compare import compare

        site = self.site
        # Never a failed, killed or running run beside the others, nor as the baseline.
        incumbent = site.kb.config.answers.incumbent
        entries, left_out = site_answers.usable_first([site.entry(row[0]) for row in rows], incumbent)
        return {
            "workload": workload,
            "entries": [(e, href(site.paths[e.id], 1)) for e in entries],
            "comparison": compare(entries) if len(entries) > 1 else None,
            "left_out": left_out,
        }
