"""The home page, which answers in one screen: per backend the summary of `kb board --summary` (pass rate,
speed-up, compile, peak memory, reruns due) beside the workloads that need attention, each one click from its
own page. Below: decisions due, broken entry files, the facets and what was recorded lately, each bounded, so
that thousands of workloads, decisions or tags leave the page as tall as a few workloads do. The workloads'
own pages (the board's table for each) and their index, in pages, come from the same board."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kb.answers.board import Board, board
from kb.answers.summary import BackendSummary, summary
from kb.index import site as index_site
from kb.index.query import Filters, list_entries
from kb.text import humanize
from kb.text.answer_lines import summary_compile_parts
from kb.website import answers as site_answers
from kb.website.pages.base import Build, Page, Publisher, digest, href, list_row, slug

RECENT = 10  # the newest entries listed
ATTENTION = 5  # the workloads that need attention, first
DUE_SHOWN = 3  # decisions due, each with its reasons
PROBLEMS_SHOWN = 5  # broken entry files named
PER_PAGE = 50  # workloads on a page of their index
HOME_FACETS = {"kind", "status", "backend", "workload", "failure"}


class HomePage(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        site = self.site
        answers_config = site.kb.config.answers
        result = board(site.db, incumbent=answers_config.incumbent, floor=answers_config.floor)
        workloads = attention_order(site_answers.workload_views(result, site.paths, 1))
        context = self._home(build, result, workloads)
        yield Page("index.html", "home.html", digest("home", context), lambda: context)
        compared = set(site.compared_workloads())
        for w in workloads:
            page = {"w": w, "compared": w["workload"] in compared}
            path = workload_path(w["workload"])
            yield Page(path, "workload.html", digest("workload", path, page), lambda page=page: page)
        pages = [workloads[start : start + PER_PAGE] for start in range(0, len(workloads), PER_PAGE)] or [[]]
        for number, shown in enumerate(pages, 1):
            index = {"workloads": [(w, w["href"].removeprefix("workloads/")) for w in shown], "number": number,
                     "count": len(pages), "total": len(workloads), "first": (number - 1) * PER_PAGE + 1}  # fmt: skip
            path = index_path(number)
            yield Page(path, "workloads.html", digest("workloads", path, index), lambda index=index: index)

    def _home(self, build: Build, result: Board, workloads: list[dict[str, Any]]) -> dict[str, Any]:
        site = self.site
        recent = [
            dict(list_row(row), href=href(site.paths[row["id"]], 0), why=site.failure_notes.get(row["id"]))
            for row in list_entries(site.db, Filters(), limit=RECENT)
        ]
        due = [
            {"id": d.decision.id, "title": d.decision.title, "reasons": d.reasons,
             "href": href(site.paths[d.decision.id], 0)}
            for d in build.due.values() if d.decision.id in site.paths
        ]  # fmt: skip
        problems = broken_files(build.problems, site.kb.entries_path)
        return {
            "total": index_site.entry_count(site.db),
            "recent": recent,
            "facets": [facet for facet in site.facets if facet[0] in HOME_FACETS],
            "due": due[:DUE_SHOWN],
            "due_count": len(due),
            "problems": problems[:PROBLEMS_SHOWN],
            "problem_count": len(problems),
            "summary": [summary_row(row) for row in summary(result, site.db).rows],
            "floor": result.floor,
            "guessed": result.guessed,
            "attention": [(w, w["href"]) for w in workloads[:ATTENTION]],
            "needing": sum(1 for w in workloads if any(w["attention"])),
            "workload_count": len(workloads),
        }


def attention_order(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What fails now first, then what failed most, then those with runs, then by name; each with the link to
    its own page."""
    ordered = sorted(workloads, key=lambda w: (-w["attention"][0], -w["attention"][1], not w["tried"], w["workload"]))
    return [dict(w, href=workload_path(w["workload"])) for w in ordered]


def workload_path(workload: str) -> str:
    return f"workloads/{slug(workload)}.html"


def index_path(number: int) -> str:
    return "workloads/index.html" if number == 1 else f"workloads/page-{number}.html"


def summary_row(row: BackendSummary) -> dict[str, Any]:
    """One backend and mode as `kb board --summary` words it."""
    interval = f" [{row.low:.3g}, {row.high:.3g}]" if row.low is not None and row.high is not None else ""
    return {
        "label": row.label,
        "passed": f"{row.completed}/{row.tried} {row.completed / row.tried:.0%}" if row.tried else "-",
        "speedup": f"×{row.geomean:.3g}{interval}" if row.geomean is not None else "-",
        "counted": row.counted,
        "compile": summary_compile_parts(row),  # pieces the column may break between, never inside one
        "memory": humanize.size(row.peak_memory_gb * 1e9) if row.peak_memory_gb is not None else "-",
        "release": row.releases[-1] if row.releases else "-",
        "due": row.rerun_due,
        "workloads": row.workloads,
    }


def broken_files(problems: list[Any], entries: Path) -> list[tuple[str, list[str]]]:
    """(file, its problems) for the home page: paths relative to the entries folder, never the builder's own."""
    found: dict[str | None, list[str]] = {}
    for problem in problems:
        path = Path(problem.path) if problem.path is not None else None
        name = path.relative_to(entries).as_posix() if path and path.is_relative_to(entries) else path and path.name
        where = f"line {problem.line}: " if problem.line is not None else ""
        found.setdefault(name, []).append(f"{where}{problem.field + ': ' if problem.field else ''}{problem.message}")
    return sorted(((name or "an entry", texts) for name, texts in found.items()))
