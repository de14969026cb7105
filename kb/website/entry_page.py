"""What an entry page shows above and beside its fields: the headline, the readable compile and placement
evidence, the charts of its stored curves and step times, and its neighbours (the workload's comparison and
trend pages, and the newest run of the same workload on each other backend and mode).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kb.model.entry import Entry
from kb.text.headline import Records, headline, record_time, sections
from kb.website.charts import curve_svg, step_time_rows, step_times_svg
from kb.website.series import curves

# kb.text.headline's sections the page shows its own way: timings by phase, links and attachments as links, a
# decision with whether it is due.
SHOWN_APART = {"Timings", "Links", "Attachments", "Decision"}
# Headline lines the page shows in full beside it: the failure section, the record-time notice.
HEADLINE_APART = {"failure", "why", "environment"}
# Fields the readable sections lay out as tables: left out of the page's list of every other field.
TABULATED = {"compile": ("frames", "graph_breaks", "recompiles"), "fallbacks": ("placement",)}

Sibling = tuple[str | None, str | None, str, str]  # backend, mode, id, recorded
COMPARED = ("run", "report")  # the kinds a comparison and a trend page are made of (as kb.website.pages)


def siblings_by_workload(db: sqlite3.Connection) -> dict[str, dict[tuple[str | None, str | None], list[Sibling]]]:
    """Every run and report of each workload, by backend and mode, oldest first: one read of the index."""
    found: dict[str, dict[tuple[str | None, str | None], list[Sibling]]] = {}
    from kb.index.site import workload_entries

    for workload, backend, mode, entry_id, recorded in workload_entries(db):
        found.setdefault(workload, {}).setdefault((backend, mode), []).append((backend, mode, entry_id, recorded))
    return found


def own_siblings(
    kind: str | None,
    workload: str | None,
    backend: str | None,
    mode: str | None,
    recorded: str,
    table: dict[str, dict[tuple[str | None, str | None], list[Sibling]]],
) -> list[Sibling]:
    """For each other backend and mode of the entry's workload, its newest run recorded by the end of the entry's
    day: what the run stood beside when it was made (a run recorded the same day, eager beside compiled, included).

    A later run does not change the links of older pages: a new entry re-renders only the pages of its own day,
    not every page of its workload (the comparison page has the newest of each).
    """
    if kind not in COMPARED or workload is None:
        return []
    day = recorded[:10]
    found = []
    for pair, runs in table.get(workload, {}).items():
        if pair == (backend, mode):
            continue
        earlier = [run for run in runs if run[3][:10] <= day]
        if earlier:
            found.append(earlier[-1])
    return sorted(found, key=lambda s: (s[0] or "", s[1] or ""))


def entry_extras(
    entries: Path,
    entry: Entry,
    attachments: list[dict[str, Any]],
    siblings: list[Sibling],
    href: Callable[[str], str],
) -> dict[str, Any]:
    """The entry page's context beyond its fields: `attachments` as kb.website.pages lists them (with sources),
    `href` the link to another entry's page from this one."""
    data = entry.data
    timings = data.get("timings") or {}
    charts = [
        {
            "caption": f"{name} over {steps:,} steps" + (f" (every {stride}th drawn)" if stride > 1 else ""),
            "svg": curve_svg(values, f"{name} at each step of this run", stride),
        }
        for name, values, stride, steps in curves(entries, attachments)
    ]
    rows = step_time_rows(timings, (data.get("settings") or {}).get("warmup"))
    if rows:
        step = timings.get("step_s")
        caption = "Step times: the first step (where a compiled run compiles), warm-up and steady steps (log scale)"
        if isinstance(step, dict) and step.get("median") and timings.get("first_step_s"):
            caption += f"; the first step took {timings['first_step_s'] / step['median']:,.0f}× a steady one"
        charts.append({"caption": caption, "svg": step_times_svg(rows, "Step times by phase")})
    workload = (data.get("workload") or {}).get("name")
    return {
        "headline": [(label, text) for label, text in headline(entry) if label not in HEADLINE_APART],
        "record_time": record_time(entry),
        # (label, a table or None, field pairs or None) for each readable section
        "readable": [
            (label, *((section, None) if isinstance(section, Records) else (None, section)))
            for label, section in sections(entry)
            if label.split(" (")[0] not in SHOWN_APART
        ],
        "charts": charts,
        "workload": workload if data.get("kind") in COMPARED else None,
        "siblings": [
            {"backend": backend, "mode": mode, "recorded": recorded[:10], "href": href(entry_id)}
            for backend, mode, entry_id, recorded in siblings
        ],
    }


def untabulated(key: str, value: Any) -> Any:
    """A front-matter section less the parts the readable sections show as tables."""
    if key in TABULATED and isinstance(value, dict):
        return {name: item for name, item in value.items() if name not in TABULATED[key]}
    return value
