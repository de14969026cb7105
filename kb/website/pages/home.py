"""The home page: what was recorded lately, the board, decisions due, the facets, and broken entry files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kb.index import site as index_site
from kb.index.query import Filters, list_entries
from kb.website import answers as site_answers
from kb.website.pages.base import Build, Page, Publisher, digest, href, list_row

RECENT = 20
HOME_FACETS = {"kind", "status", "backend", "workload", "failure"}


class HomePage(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        site = self.site
        recent = [
            dict(list_row(row), href=href(site.paths[row["id"]], 0), why=site.failure_notes.get(row["id"]))
            for row in list_entries(site.db, Filters(), limit=RECENT)
        ]
        context = {
            "total": index_site.entry_count(site.db),
            "recent": recent,
            "facets": [facet for facet in site.facets if facet[0] in HOME_FACETS],
            "due": [
                {
                    "id": d.decision.id,
                    "title": d.decision.title,
                    "reasons": d.reasons,
                    "href": href(site.paths[d.decision.id], 0),
                }
                for d in build.due.values()
                if d.decision.id in site.paths
            ],
            "problems": broken_files(build.problems, site.kb.entries_path),
            "workloads": site.compared_workloads(),
            "board": site_answers.board_view(
                site.db, site.kb.config.answers.incumbent, site.paths, 0, site.kb.config.answers.floor
            ),
        }
        yield Page("index.html", "home.html", digest("home", context), lambda: context)


def broken_files(problems: list[Any], entries: Path) -> list[tuple[str, list[str]]]:
    """(file, its problems) for the home page: paths relative to the entries folder, never the builder's own."""
    found: dict[str | None, list[str]] = {}
    for problem in problems:
        path = Path(problem.path) if problem.path is not None else None
        name = path.relative_to(entries).as_posix() if path and path.is_relative_to(entries) else path and path.name
        where = f"line {problem.line}: " if problem.line is not None else ""
        found.setdefault(name, []).append(f"{where}{problem.field + ': ' if problem.field else ''}{problem.message}")
    return sorted(((name or "an entry", texts) for name, texts in found.items()))
