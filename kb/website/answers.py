"""The answers as the site shows them: the board (home and workload pages, comparisons index), each decision's
evidence with its key figure (a failed run or failed numerics said first), and the decisions citing an entry. Plain
data for the templates, links relative to the page's folder depth."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from kb.answers import figures
from kb.answers.board import Board, Cell, WorkloadBoard, board
from kb.index import answers
from kb.text import humanize
from kb.text.answer_lines import comparison_text, compile_text, figure_text, footing_text, ratio_text, run_texts

SHOWN_VERDICTS = ("baseline", "counted", "unchecked", "numerics failed")
TONES = {"baseline": "baseline", "counted": "good", "unchecked": "unchecked", "numerics failed": "bad"}
FAILURES_NAMED = 2  # the most common failures a workload's line names


def board_view(
    db: sqlite3.Connection, incumbent: str, paths: dict[str, str], depth: int, floor: float
) -> list[dict[str, Any]]:
    """One table per workload: a row per backend and mode, each linked to the runs behind it."""
    return workload_views(board(db, incumbent=incumbent, floor=floor), paths, depth)


def workload_views(result: Board, paths: dict[str, str], depth: int) -> list[dict[str, Any]]:
    """Each workload of a board as the site shows it: its answer, its cells, its reported figures, and what
    needs attention in it (failures on the newest release, failed numerics, failed runs)."""

    def href(entry_id: str | None) -> str | None:
        return "../" * depth + paths[entry_id] if entry_id in paths else None

    return [_workload_view(workload, href) for workload in result.workloads]


def _workload_view(workload: WorkloadBoard, href: Callable[[str | None], str | None]) -> dict[str, Any]:
    cells = [_cell_view(cell, href) for cell in workload.cells]
    reported = [
        {"label": f"{r.backend} · {r.mode}" if r.mode else r.backend, "figure": figure_text(r.figure),
         "source": ", ".join(part for part in (r.publisher, r.date) if part), "href": href(r.entry), "entry": r.entry}
        for r in workload.reported
    ]  # fmt: skip
    failing = sorted((c for c in workload.cells if c.failure), key=lambda c: -c.failure["count"])  # type: ignore[index]
    worries = [c.current_failure for c in workload.cells if c.current_failure]
    worries += [f"{c.label}: numerics failed" for c in workload.cells if c.verdict == "numerics failed"]
    completed, tried = sum(c.completed for c in workload.cells), sum(c.tried for c in workload.cells)
    return {
        "workload": workload.workload, "baseline": workload.baseline, "reason": workload.baseline_reason,
        "best": workload.best, "cells": cells, "reported": reported, "coverage": workload.coverage,
        "completed": completed, "tried": tried, "worries": worries,
        "failures": [f"{c.failure['class']} ×{c.failure['count']} on {c.label}"  # type: ignore[index]
                     for c in failing[:FAILURES_NAMED]],
        "more_failures": max(0, len(failing) - FAILURES_NAMED),
        # What puts a workload first among those that need attention: what fails now, then how much failed.
        "attention": (len(worries), tried - completed),
    }  # fmt: skip


def _cell_view(cell: Cell, href: Callable[[str | None], str | None]) -> dict[str, Any]:
    failure = cell.failure
    numerics, stayed = run_texts(cell)
    return {
        "label": cell.label,
        "figure": figure_text(cell.figure),
        # The footing as the CLI prints it: n runs and their spread, the backend release and the date.
        "footing": footing_text(cell) or ", ".join(part for part in (cell.release, cell.evidence_date) if part),
        "comparison": comparison_text(cell),
        "reproduction": cell.reproduction if cell.figure else "",
        "ratio": ratio_text(cell) if cell.verdict in SHOWN_VERDICTS else "-",
        "tone": TONES.get(cell.verdict, "none"),
        "numerics": numerics,
        "numerics_note": cell.numerics_note,
        "compile": compile_text(cell),
        "memory": humanize.size(cell.peak_memory_gb * 1e9) if cell.peak_memory_gb is not None else "-",
        "done": f"{cell.completed}/{cell.tried}",
        "stayed": stayed,
        "failure": f"{failure['class']} ×{failure['count']}" if failure else "",
        "failure_message": " ".join(str((failure or {}).get("message") or "").split()),
        "failure_href": href(failure["entry"]) if failure else None,
        "current_failure": cell.current_failure,
        "history": cell.history,
        "note": _note(cell),
        "href": href(cell.figure.entry if cell.figure else None),
        "runs": [(entry_id, href(entry_id)) for entry_id in cell.entries],
    }


def _note(cell: Cell) -> str:
    """Why a cell has no ratio, unless it only repeats what its figure's column says (the failures on the newest
    release)."""
    note = cell.note or ("" if cell.verdict in SHOWN_VERDICTS else cell.verdict)
    return "" if cell.current_failure and note.startswith(cell.current_failure) else note


def evidence_ids(front_matter: dict[str, Any]) -> list[str]:
    evidence = (front_matter.get("links") or {}).get("evidence") or []
    return [evidence] if isinstance(evidence, str) else [str(e) for e in evidence]


def decision_evidence(db: sqlite3.Connection, ids: list[str], paths: dict[str, str]) -> list[dict[str, Any]]:
    """Each evidence entry by title, with its key figure (the board's headline, a coverage pass count or how
    it ended), linked from the decisions page (depth 0)."""
    data = answers.front_matters(db, ids)
    found = []
    for entry_id in ids:
        entry = data.get(entry_id)
        if entry is None:
            found.append({"id": entry_id, "title": entry_id, "figure": "not in the knowledge base", "href": None})
            continue
        found.append({"id": entry_id, "title": entry.get("title") or entry_id, "figure": key_figure(entry),
                      "failed": failed(entry), "href": paths.get(entry_id)})  # fmt: skip
    return found


def key_figure(entry: dict[str, Any]) -> str:
    coverage = entry.get("coverage")
    if entry.get("kind") == "coverage" and isinstance(coverage, dict):
        return f"{coverage.get('passed', '?')} of {coverage.get('total', '?')} cases passed"
    headline = figures.headline(entry)
    text = figure_text(headline) if headline else ""
    if figures.numerics(entry) == "failed":  # a figure that is wrong is no result: said before the figure
        why = figures.nonfinite(entry)
        text = "numerics failed" + (f" ({why})" if why else "") + (f", {text}" if text else "")
    status = entry.get("status")
    if status and status != "completed":
        failure = (entry.get("failure") or {}).get("class") if isinstance(entry.get("failure"), dict) else None
        text = f"{status}" + (f" ({failure})" if failure else "") + (f", {text}" if text else "")
    if (entry.get("provenance") or {}).get("source") == "reported":
        text = f"{text or 'no figure'} (reported)"
    return text or "no figure"


def failed(entry: dict[str, Any]) -> bool:
    """Whether an evidence entry is a run that did not complete, or whose numerics failed: marked wherever listed."""
    status = entry.get("status")
    return figures.numerics(entry) == "failed" or (bool(status) and status not in ("completed", "running"))


def comparison_rows(comparison: Any) -> list[dict[str, Any]]:
    """Each compared figure as `kb compare` words it: the value humanised with its unit, the ratio, the verdict."""
    found = []
    for row in comparison.rows:
        cells = []
        for index, value in enumerate(row.values):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            ratio = row.ratios[index] if index and index < len(row.ratios) else None
            cells.append({
                "text": humanize.quantity(value, row.unit) if number else "-" if value is None else str(value),
                "ratio": f"×{ratio:.3g}" if ratio is not None else "",
                "verdict": row.verdicts[index] if index and index < len(row.verdicts) else "",
            })  # fmt: skip
        found.append({"section": row.section, "name": row.name, "cells": cells})
    return found
