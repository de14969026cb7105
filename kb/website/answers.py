"""The answers as the site shows them: the board (home page, comparisons index), each decision's evidence
with its key figure (a failed run or failed numerics said first), and the decisions citing an entry. Plain data for
the templates, links relative to the page's folder depth."""

from __future__ import annotations

import sqlite3
from typing import Any

from kb import humanize
from kb.answers import figures
from kb.answers.board import board
from kb.answers_text import compile_text, figure_text, ratio_text, run_texts
from kb.index import answers

SHOWN_VERDICTS = ("baseline", "counted", "unchecked", "numerics failed")
TONES = {"baseline": "baseline", "counted": "good", "unchecked": "unchecked", "numerics failed": "bad"}


def board_view(db: sqlite3.Connection, incumbent: str, paths: dict[str, str], depth: int) -> list[dict[str, Any]]:
    """One table per workload: a row per backend and mode, each linked to the runs behind it."""

    def href(entry_id: str | None) -> str | None:
        return "../" * depth + paths[entry_id] if entry_id in paths else None

    found = []
    for workload in board(db, incumbent=incumbent).workloads:
        cells = []
        for cell in workload.cells:
            failure = cell.failure
            numerics, stayed = run_texts(cell)
            cells.append({
                "label": cell.label,
                "figure": figure_text(cell.figure),
                "ratio": ratio_text(cell) if cell.verdict in SHOWN_VERDICTS else "-",
                "tone": TONES.get(cell.verdict, "none"),
                "numerics": numerics,
                "compile": compile_text(cell),
                "done": f"{cell.completed}/{cell.tried}",
                "stayed": stayed,
                "failure": f"{failure['class']} ×{failure['count']}" if failure else "",
                "failure_message": (failure or {}).get("message") or "",
                "note": cell.note or ("" if cell.verdict in SHOWN_VERDICTS else cell.verdict),
                "href": href(cell.figure.entry if cell.figure else None),
                "runs": [(entry_id, href(entry_id)) for entry_id in cell.entries],
            })  # fmt: skip
        reported = [
            {"label": f"{r.backend} · {r.mode}" if r.mode else r.backend, "figure": figure_text(r.figure),
             "publisher": r.publisher or "", "href": href(r.entry), "entry": r.entry}
            for r in workload.reported
        ]  # fmt: skip
        found.append({"workload": workload.workload, "baseline": workload.baseline, "reason": workload.baseline_reason,
                      "best": workload.best, "cells": cells, "reported": reported})  # fmt: skip
    return found


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
