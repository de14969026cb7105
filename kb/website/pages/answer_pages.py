"""The CLI's answers as pages: the evidence checklist (`kb board --missing`), regressions across releases
(`kb board --regressions`) and expectations (`kb expect`), each computed by the same kb.answers function the
command calls, with every run and release it names linked to its page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kb.errors import KbError
from kb.website.pages.base import Build, Page, Publisher, digest, href, slug

MARKS = {True: ("yes", "good"), False: ("no", "bad"), None: ("n/a", "none")}


def linked(entry_id: str | None, paths: dict[str, str], depth: int = 0) -> dict[str, Any] | None:
    """An entry id with its page's link from a page `depth` folders down (None where the entry has no page)."""
    if not entry_id:
        return None
    return {"id": entry_id, "href": href(paths[entry_id], depth) if entry_id in paths else None}


def shown_error(exc: KbError, root: str) -> str:
    """An error as a page shows it: file names relative to the knowledge base, never the builder's own paths."""
    return str(exc).replace(root.rstrip("/") + "/", "")


class ChecklistPage(Publisher):
    """`kb board --missing`: per workload and backend, what is still missing before its result can be believed; a
    page per workload (a base of thousands of runs has dozens), and an index of what each still misses."""

    def pages(self, build: Build) -> Iterator[Page]:
        from kb.answers.board import board

        config, paths = self.site.kb.config.answers, self.site.paths
        index = []
        for workload in board(self.site.db, incumbent=config.incumbent, floor=config.floor).workloads:
            cells = []
            for cell in workload.cells:
                checks = [
                    {"mark": MARKS[c.ok][0], "tone": MARKS[c.ok][1], "question": c.question, "detail": c.detail,
                     "evidence": linked(c.evidence, paths, 1)}
                    for c in cell.checklist
                ]  # fmt: skip
                answered = sum(1 for c in cell.checklist if c.ok is True)
                asked = sum(1 for c in cell.checklist if c.ok is not None)
                cells.append({"label": cell.label, "answered": answered, "asked": asked, "checks": checks})
            path = f"checklist/{slug(workload.workload)}.html"
            context = {"workload": workload.workload, "cells": cells}
            yield Page(path, "checklist.html", digest("checklist", context), lambda c=context: c)
            summary = [(cell["label"], cell["answered"], cell["asked"]) for cell in cells]
            index.append({"workload": workload.workload, "href": f"{slug(workload.workload)}.html", "cells": summary})
        listed = {"workloads": index}
        yield Page("checklist/index.html", "checklist_index.html", digest("checklist-index", listed), lambda: listed)


class RegressionsPage(Publisher):
    """`kb board --regressions`: what stopped working across releases, apart from what got slower."""

    def pages(self, build: Build) -> Iterator[Page]:
        from kb.answers.regressions import regressions
        from kb.answers.verdict import Verdict

        paths = self.site.paths
        found = regressions(self.site.db, self.site.kb.entries_path, floor=self.site.kb.config.answers.floor)
        breakages = [
            {"where": _where(b.workload, b.backend, b.mode), "package": b.package, "before": b.before,
             "after": b.after, "failure": b.failure, "cases": b.cases, "was": linked(b.passed_entry, paths),
             "now": linked(b.failed_entry, paths)}
            for b in found.breakages
        ]  # fmt: skip
        slowdowns = [
            {"workload": s.workload, "series": s.label(), "figure": s.figure, "package": s.package,
             "last_good": s.last_good, "first_bad": s.first_bad, "change": f"{s.change:+.1%}",
             "verdict": Verdict(**s.comparison).text() if s.comparison else "",
             "before": [linked(e, paths) for e in s.before], "after": [linked(e, paths) for e in s.after]}
            for s in found.slowdowns
        ]  # fmt: skip
        context = {"breakages": breakages, "slowdowns": slowdowns}
        yield Page("regressions.html", "regressions.html", digest("regressions", context), lambda: context)


class ExpectationsPage(Publisher):
    """`kb expect`: each bound in expectations.toml against the newest evidence: pass, fail, improved or missing."""

    def pages(self, build: Build) -> Iterator[Page]:
        from kb.answers import expectations

        kb, paths = self.site.kb, self.site.paths
        path = kb.root / expectations.FILE_NAME
        context: dict[str, Any] = {"file": expectations.FILE_NAME, "present": path.is_file(), "outcomes": [],
                                   "error": None}  # fmt: skip
        if path.is_file():
            try:
                outcomes = expectations.check(self.site.db, expectations.read(path), path)
            except KbError as exc:  # a wrong file is shown, named, as kb expect says it
                context["error"] = shown_error(exc, str(kb.root))
            else:
                context["outcomes"] = [_outcome(outcome, paths) for outcome in outcomes]
        yield Page("expectations.html", "expectations.html", digest("expectations", context), lambda: context)


def _where(workload: str, backend: str, mode: str | None) -> str:
    return f"{workload} on {backend}" + (f" · {mode}" if mode else "")


def _outcome(outcome: Any, paths: dict[str, str]) -> dict[str, Any]:
    from kb.text.answer_lines import expectation_parts

    where, bound, actual = expectation_parts(outcome)
    return {"verdict": outcome.verdict, "where": where, "bound": bound, "actual": actual, "notes": outcome.notes,
            "entry": linked(outcome.entry, paths)}  # fmt: skip
