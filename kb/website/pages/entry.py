"""Entry pages: one per entry, the answer first, then its timings, failure, fields, links and attachments."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from kb.index import answers as index_answers
from kb.index import site as index_site
from kb.model.entry import Entry
from kb.text.headline import record_time
from kb.text.sections import IDENTITY, SECTIONS, flatten
from kb.website.entry_page import entry_extras, own_siblings, siblings_by_workload, untabulated
from kb.website.markup import inside_site, markdown_html
from kb.website.pages.answer_pages import shown_error
from kb.website.pages.base import Build, Page, Publisher, digest, entry_page_path, facet_path, href
from kb.website.search_text import search_text

PHASES = (("load_s", "load"), ("compile_s", "compile"), ("first_step_s", "first step"), ("warmup_s", "warm-up"))
PHASE_KEYS = {key for key, _ in PHASES} | {"step_s", "wall_s"}
SPECIAL = {"timings", "failure", "attachments", "links", "decision"}  # sections with a layout of their own
_OUTPUT = re.compile(r"^## Output[ \t]*$", re.MULTILINE)


class EntryPages(Publisher):
    @cached_property
    def siblings(self) -> dict[str, Any]:
        return siblings_by_workload(self.site.db)

    @cached_property
    def citing(self) -> dict[str, list[tuple[str, str]]]:
        """evidence id -> the decisions citing it: listed on the evidence's page (read once per build)."""
        return index_answers.citing_decisions(self.site.db)

    def pages(self, build: Build) -> Iterator[Page]:
        entries = self.site.kb.entries_path
        rows = index_site.entry_files(self.site.db)
        folders = _folders(entries)  # one walk, instead of a failed look for each entry without files
        for entry_id, path, sha, *identity in rows:
            folder = path.removesuffix(".md")
            files = _attachment_files(entries, folder) if folder in folders else []
            state = build.due.get(entry_id)
            siblings = own_siblings(*identity, self.siblings)  # linked from the page: part of its key
            yield Page(
                path=entry_page_path(path),
                template="entry.html",
                key=digest(
                    "entry", sha, files, state and (state.reasons, state.entries), siblings, self.citing.get(entry_id)
                ),
                context=partial(self.context, entry_id, state),
                entry=(entry_id, state),
            )

    def context(self, entry_id: str, due_state: Any) -> dict[str, Any]:
        """An entry page's data: also what a worker process renders it from (kb.website.workers)."""
        entries, paths = self.site.kb.entries_path, self.site.paths
        entry = self.site.entry(entry_id)
        path = str(entry.path.relative_to(entries).as_posix())
        data = entry.data
        depth = entry_page_path(path).count("/")
        body, output = _split_output(entry.body)
        failure = data.get("failure") or {}
        timings = data.get("timings") or {}
        reported = (data.get("provenance") or {}).get("source") == "reported"
        special = SPECIAL | ({"provenance"} if reported else set())  # a reported entry shows it as its Source
        sections = [
            (label, flatten(untabulated(key, data[key])))
            for key, label in SECTIONS
            if key not in special and data.get(key) not in (None, {}, [])
        ]
        shown = IDENTITY | {key for key, _ in SECTIONS}
        rest = {key: value for key, value in data.items() if key not in shown and value not in (None, {}, [])}
        if rest:
            sections.append(("More", flatten(rest)))
        attachments = _attachments(data.get("attachments") or [], path)
        workload = (data.get("workload") or {}).get("name")
        siblings = own_siblings(
            entry.kind, workload, data.get("backend"), data.get("mode"), entry.recorded, self.siblings
        )
        return {
            "entry": entry,
            "data": data,
            "facts": _facts(entry),
            "reported": reported,
            "phases": _phases(timings),
            "timing_rows": flatten({k: v for k, v in timings.items() if k not in PHASE_KEYS}),
            "failure": failure or None,
            "failure_rows": flatten({k: v for k, v in failure.items() if k not in ("class", "message", "explanation")}),
            "decision_rows": flatten({k: v for k, v in data["decision"].items() if k != "reviews"})
            if data.get("decision")
            else [],
            "reviews": _reviews(entry, str(self.site.kb.root)) if entry.kind == "decision" else None,
            "due": due_state,
            "due_entries": [(i, href(paths[i], depth) if i in paths else None) for i in due_state.entries[:10]]
            if due_state
            else [],
            "sections": sections,
            "links": self._links(data.get("links") or {}, depth),
            "attachments": attachments,
            "body": markdown_html(body, depth=depth) if body.strip() else None,
            "output": markdown_html(output, depth=depth) if output else None,
            "filters": _search_filters(data),
            "search_text": search_text(entry),
            "cited_by": [(i, t, href(paths[i], depth)) for i, t in self.citing.get(entry_id, [])],
            **entry_extras(entries, entry, attachments, siblings, lambda t: "../" * depth + paths[t]),
        }

    def _links(self, links: dict[str, Any], depth: int) -> list[tuple[str, list[tuple[str, str | None]]]]:
        paths = self.site.paths
        found = []
        for role, targets in links.items():
            targets = [targets] if isinstance(targets, str) else list(targets or [])
            found.append((role, [(t, href(paths[t], depth) if t in paths else None) for t in targets]))
        return found


def _reviews(decision: Entry, root: str) -> dict[str, Any]:
    """A decision's reviews, oldest first, each as date, reviewer and note; or the review file kb cannot read."""
    from kb.errors import KbError
    from kb.store.reviews import reviews_of

    try:
        found = reviews_of(decision)
    except KbError as exc:  # a review file with git conflict markers, say: named within the knowledge base
        return {"items": [], "unreadable": shown_error(exc, root)}
    items = [
        {"date": str(r.get("date") or r.get("time") or "")[:10], "by": r.get("by"), "note": r.get("note")}
        for r in found
    ]
    return {"items": items, "unreadable": None}


def _facts(entry: Entry) -> list[tuple[str, str, str | None]]:
    """(label, value, facet page or None) for the line under an entry's title."""
    data = entry.data
    facts = [("recorded", entry.recorded, None)]
    workload = (data.get("workload") or {}).get("name")
    for label, value, dim in (
        ("kind", entry.kind, "kind"),
        ("status", entry.status, "status"),
        ("backend", data.get("backend"), "backend"),
        ("mode", data.get("mode"), "mode"),
        ("workload", workload, "workload"),
        ("author", data.get("author"), None),
    ):
        if value:
            facts.append((label, str(value), facet_path(dim, str(value)) if dim else None))
    for tag in data.get("tags") or []:
        facts.append(("tag", tag, facet_path("tag", tag)))
    return facts


def _split_output(body: str) -> tuple[str, str]:
    """The body before its `## Output` section, and that section (shown collapsed: logs are long)."""
    match = _OUTPUT.search(body)
    if match is None:
        return body, ""
    return body[: match.start()], body[match.end() :].strip("\n")


def _phases(timings: dict[str, Any]) -> list[tuple[str, str]]:
    from kb.text.humanize import duration

    rows = [(label, duration(timings[key])) for key, label in PHASES if isinstance(timings.get(key), (int, float))]
    step = timings.get("step_s")
    if isinstance(step, dict) and step.get("median") is not None:
        spread = f" (p10 {duration(step['p10'])}, p90 {duration(step['p90'])})" if {"p10", "p90"} <= set(step) else ""
        rows.append(("steady step, median", f"{duration(step['median'])}{spread} over {step.get('count', '?')} steps"))
    if isinstance(timings.get("wall_s"), (int, float)):
        rows.append(("wall", duration(timings["wall_s"])))
    return rows


def _attachments(items: list[Any], entry_path: str) -> list[dict[str, Any]]:
    """Attachment links (relative to the entry, as in the entries folder); one that would leave it is not linked."""
    folder = posixpath.dirname(entry_path)
    found = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        relative = item["path"]
        source = posixpath.normpath(posixpath.join(folder, relative))
        safe = "\x00" not in relative and not relative.startswith("/") and inside_site(source, 0)
        found.append(
            {
                "path": relative,
                "role": item.get("role"),
                "bytes": item.get("bytes"),
                "href": relative if safe else None,
                "source": source if safe else None,
            }
        )
    return found


def _folders(entries: Path) -> set[str]:
    """Every folder under the entries folder, relative to it, with '/'."""
    found = set()
    for root, dirs, _ in os.walk(entries):
        relative = os.path.relpath(root, entries)
        found.update(name if relative == "." else f"{relative}/{name}" for name in dirs)
    return found


def _attachment_files(entries: Path, folder: str) -> list[tuple[str, int, int]]:
    """(path, size, mtime) of every file in an entry's attachment folder: part of its page's key."""
    found = []
    stack = [entries / folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                for item in listing:
                    if item.is_dir(follow_symlinks=False):
                        stack.append(Path(item.path))
                    elif item.is_file(follow_symlinks=False):
                        stat = item.stat()
                        found.append((os.path.relpath(item.path, entries), stat.st_size, stat.st_mtime_ns))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return sorted(found)


def _search_filters(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(filter, value) pairs the search page narrows by."""
    pairs = [
        ("kind", data.get("kind")),
        ("status", data.get("status")),
        ("backend", data.get("backend")),
        ("mode", data.get("mode")),
        ("workload", (data.get("workload") or {}).get("name")),
        ("failure", (data.get("failure") or {}).get("class")),
        ("torch", None if record_time(Entry(data)) else (data.get("versions") or {}).get("torch")),  # not the run's
        ("source", (data.get("provenance") or {}).get("source")),
    ]
    pairs += [("tag", tag) for tag in data.get("tags") or []]
    return [(name, str(value)) for name, value in pairs if value not in (None, "")]
