"""What the site shows: every page as a path, a template, and the data it is rendered from.

Entry pages depend only on their entry file (and its attachments), so their key is known without
reading the entry: unchanged ones are not rendered again. Every other page gathers its data from the
SQLite index; its key is a hash of that data, so a page is rendered only when what it shows changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import frontmatter
from kb.entry import Entry
from kb.errors import KbError
from kb.headline import record_time
from kb.index import answers as index_answers
from kb.index import site as index_site
from kb.index.query import COLUMNS, Filters, list_entries, newest_per_group, version_key
from kb.sections import IDENTITY, SECTIONS, flatten
from kb.store import KnowledgeBase
from kb.website import answers as site_answers
from kb.website.drill import SEARCH_NAMES, within
from kb.website.entry_page import entry_extras, own_siblings, siblings_by_workload, untabulated
from kb.website.markup import inside_site, markdown_html
from kb.website.why import failure_note

if TYPE_CHECKING:
    from markupsafe import Markup

PAGE_SIZE = 100
RECENT = 20
# Packages whose versions get facet pages: PyTorch and the backend stacks people compare across releases.
FACET_PACKAGES = ("torch", "torch-xla", "torch-neuronx", "neuronx-cc", "torch-tpu", "libtpu", "jax", "triton")
FACETS = (
    ("kind", "Kind", "e.kind"), ("status", "Status", "e.status"), ("backend", "Backend", "e.backend"),
    ("workload", "Workload", "e.workload"), ("mode", "Mode", "e.mode"), ("failure", "Failure class", "e.failure_class"),
)  # fmt: skip
# Facets read straight off an index row: (facet, column of the row).
FACET_COLUMNS = tuple((dim, column.removeprefix("e.")) for dim, _, column in FACETS)
PHASES = (("load_s", "load"), ("compile_s", "compile"), ("first_step_s", "first step"), ("warmup_s", "warm-up"))
PHASE_KEYS = {key for key, _ in PHASES} | {"step_s", "wall_s"}
SPECIAL = {"timings", "failure", "attachments", "links", "decision"}  # sections with a layout of their own
_OUTPUT = re.compile(r"^## Output[ \t]*$", re.MULTILINE)
_SLUG = re.compile(r"[^A-Za-z0-9._+-]+")
# Versions of entries whose environment was captured when they were recorded describe the recording machine, not
# the run's: they are left out of the version lists (kb.headline.record_time says the same of one entry).


@dataclass
class Page:
    path: str  # relative to the site folder, with '/'
    template: str
    key: str  # a hash of everything the page shows: unchanged key, unchanged page
    context: Callable[[], dict[str, Any]]
    # An entry page's (entry id, revisit state): what another process needs to render it. Entry pages are
    # also the pages indexed for full-text search.
    entry: tuple[str, Any] | None = None

    @property
    def depth(self) -> int:
        return self.path.count("/")

    @property
    def search(self) -> bool:
        return self.entry is not None


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def slug(value: str) -> str:
    """A file name for a facet value; values that had to change get a short hash so two never collide."""
    clean = _SLUG.sub("-", value).strip("-.") or "value"
    return clean if clean == value else f"{clean[:60]}-{hashlib.sha256(value.encode()).hexdigest()[:6]}"


def entry_page_path(entries_relative: str) -> str:
    return f"entries/{entries_relative.removesuffix('.md')}.html"  # entry files end in .md (kb.store.scan)


class Site:
    """The pages of one knowledge base, read from its index."""

    def __init__(self, kb: KnowledgeBase, db: sqlite3.Connection):
        self.kb = kb
        self.db = db
        self.paths = {entry_id: entry_page_path(path) for entry_id, path in index_site.entry_paths(db)}
        self._rows_html: dict[tuple[str, int], Markup] = {}
        self._sidebars_html: dict[tuple[int, str | None], Markup] = {}

    # -- entry pages ------------------------------------------------------------------------------
    @cached_property
    def siblings(self) -> dict[str, Any]:
        return siblings_by_workload(self.db)

    def entry_pages(self, due: dict[str, Any]) -> Iterator[Page]:
        rows = index_site.entry_files(self.db)
        folders = _folders(self.kb.entries_path)  # one walk, instead of a failed look for each entry without files
        for entry_id, path, sha, *identity in rows:
            folder = path.removesuffix(".md")
            files = _attachment_files(self.kb.entries_path, folder) if folder in folders else []
            state = due.get(entry_id)
            siblings = own_siblings(*identity, self.siblings)  # linked from the page: part of its key
            yield Page(
                path=entry_page_path(path),
                template="entry.html",
                key=digest(
                    "entry", sha, files, state and (state.reasons, state.entries), siblings, self.citing.get(entry_id)
                ),
                context=partial(self.entry_context, entry_id, state),
                entry=(entry_id, state),
            )

    @cached_property
    def citing(self) -> dict[str, list[tuple[str, str]]]:
        """evidence id -> the decisions citing it: listed on the evidence's page (read once per build)."""
        return index_answers.citing_decisions(self.db)

    def entry_context(self, entry_id: str, due_state: Any) -> dict[str, Any]:
        entry = self.entry(entry_id)
        path = str(entry.path.relative_to(self.kb.entries_path).as_posix())
        data = entry.data
        page_path = entry_page_path(path)
        depth = page_path.count("/")
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
            "facts": self._facts(entry),
            "reported": reported,
            "phases": _phases(timings),
            "timing_rows": flatten({k: v for k, v in timings.items() if k not in PHASE_KEYS}),
            "failure": failure or None,
            "failure_rows": flatten({k: v for k, v in failure.items() if k not in ("class", "message", "explanation")}),
            "decision_rows": flatten(data["decision"]) if data.get("decision") else [],
            "due": due_state,
            "sections": sections,
            "links": self._links(data.get("links") or {}, depth),
            "attachments": attachments,
            "body": markdown_html(body, depth=depth) if body.strip() else None,
            "output": markdown_html(output, depth=depth) if output else None,
            "filters": _search_filters(data),
            "cited_by": [(i, t, self.href(self.paths[i], depth)) for i, t in self.citing.get(entry_id, [])],
            **entry_extras(self.kb.entries_path, entry, attachments, siblings, lambda t: "../" * depth + self.paths[t]),
        }

    def entry(self, entry_id: str) -> Entry:
        """An entry as indexed (its front matter was parsed and checked then), with its body from the file."""
        path, front_matter = index_site.front_matter(self.db, entry_id)
        file = self.kb.entries_path / path
        _, body, _ = frontmatter.split(file.read_text("utf-8"), file)
        return Entry(data=json.loads(front_matter), body=body, path=file)

    def _facts(self, entry: Entry) -> list[tuple[str, str, str | None]]:
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

    def _links(self, links: dict[str, Any], depth: int) -> list[tuple[str, list[tuple[str, str | None]]]]:
        found = []
        for role, targets in links.items():
            targets = [targets] if isinstance(targets, str) else list(targets or [])
            found.append((role, [(t, self.href(self.paths[t], depth) if t in self.paths else None) for t in targets]))
        return found

    @staticmethod
    def href(target: str, depth: int) -> str:
        return "../" * depth + target

    # -- listing pages ----------------------------------------------------------------------------
    def facets(self) -> list[tuple[str, str, list[tuple[str, int]]]]:
        """(dimension, label, [(value, count)]) for every facet, values by count then name."""
        found = []
        for dim, label, column in FACETS:
            found.append((dim, label, index_site.facet_counts(self.db, column.removeprefix("e."))))
        found.append(("tag", "Tag", index_site.tag_counts(self.db)))
        for package in FACET_PACKAGES:
            rows = index_site.run_version_counts(self.db, package)
            if rows:
                rows.sort(key=lambda row: version_key(row[0]), reverse=True)
                found.append((f"package:{package}", package, rows))
        return found

    def listing_pages(self, facets: list[tuple[str, str, list[tuple[str, int]]]]) -> Iterator[Page]:
        """All entries, and the entries of each facet value, newest first, PAGE_SIZE a page.

        The index is read once (every row, then which tags and versions each entry has) and the rows are
        dealt to the facet values in one pass: a query per value would read the index hundreds of times.
        """
        why = self.failure_notes
        rows = [dict(_row(row), why=why.get(row["id"])) for row in list_entries(self.db, Filters(), limit=None)]
        tags: dict[str, list[str]] = {}
        for entry_id, tag in index_site.entry_tags(self.db):
            tags.setdefault(entry_id, []).append(tag)
        versions: dict[str, list[tuple[str, str]]] = {}
        for entry_id, package, version in index_site.run_versions(self.db, FACET_PACKAGES):
            versions.setdefault(entry_id, []).append((f"package:{package}", version))
        dealt: dict[tuple[str, str], list[dict[str, Any]]] = {}
        keyed: dict[str, list[tuple[str, str]]] = {}  # each row's facet values: counted within each list it is on
        for row in rows:
            keys = [(dim, row[column]) for dim, column in FACET_COLUMNS if row[column] is not None]
            keys += [("tag", tag) for tag in tags.get(row["id"], ())]
            keys += versions.get(row["id"], [])
            keyed[row["id"]] = keys
            for key in keys:
                dealt.setdefault(key, []).append(row)
        sidebar = digest(facets)
        # Each row is on several pages (all entries, its backend, its workload ...): its text for the keys, once.
        texts = {row["id"]: repr((*row.values(), self.paths[row["id"]])) for row in rows}
        yield from self._paged("list/index", "All entries", rows, texts, facets, sidebar, None)
        for dim, label, values in facets:
            for value, _ in values:
                stem = facet_path(dim, value)[: -len(".html")]
                chosen = dealt.get((dim, value), [])
                drill = within(facets, (keyed[row["id"]] for row in chosen), dim)
                yield from self._paged(stem, f"{label}: {value}", chosen, texts, drill, digest(drill), dim, value)

    def _paged(
        self,
        stem: str,
        title: str,
        rows: list[dict[str, Any]],
        texts: dict[str, str],
        facets: list,
        sidebar: str,
        dim: str | None,
        value: str | None = None,
    ) -> Iterator[Page]:
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        for number in range(1, pages + 1):
            path = f"{stem}.html" if number == 1 else f"{stem}-{number}.html"
            chunk = rows[(number - 1) * PAGE_SIZE :][:PAGE_SIZE]
            # The key hashes the rows as text: cheaper than the page data as JSON, for thousands of pages.
            shown = "\n".join(texts[row["id"]] for row in chunk)
            key = digest("listing", path, title, sidebar, len(rows), hashlib.sha256(shown.encode()).hexdigest())

            def context(chunk: list = chunk, path: str = path, number: int = number, pages: int = pages) -> dict:
                depth = path.count("/")
                return {
                    "title": title,
                    "rows": [self._row_html(row, depth) for row in chunk],
                    "total": len(rows),
                    "sidebar": self._sidebar_html(facets, depth, stem, title, dim, value),
                    "pager": _pager(stem.rsplit("/", 1)[-1], number, pages),
                    "first": (number - 1) * PAGE_SIZE + 1,
                }

            yield Page(path, "listing.html", key, context)

    # An entry's row is on every listing page of its facets, and the sidebar on every listing page: each is
    # rendered once per folder depth (links are relative) instead of once per page, a fifth of the CPU.
    def _row_html(self, row: dict[str, Any], depth: int) -> Markup:
        key = (row["id"], depth)
        if key not in self._rows_html:
            linked = dict(row, href=self.href(self.paths[row["id"]], depth))
            self._rows_html[key] = _macro("entry_row")(linked)
        return self._rows_html[key]

    def _sidebar_html(
        self, facets: list, depth: int, stem: str, title: str, dim: str | None, value: str | None
    ) -> Markup:
        """All entries' facets; on a facet value's pages, the counts within that list (kb.website.drill)."""
        key = (depth, stem if dim else None)
        if key not in self._sidebars_html:
            rel = "../" * depth
            self._sidebars_html[key] = (
                _macro("drill_down")(facets, rel, title, dim and SEARCH_NAMES.get(dim), value)
                if dim
                else _macro("facet_list")(facets, rel, None)
            )
        return self._sidebars_html[key]

    @cached_property
    def failure_notes(self) -> dict[str, str]:
        """Each failed entry's reason in one line, for the lists."""
        rows = index_site.failure_texts(self.db)
        return {entry_id: note for entry_id, *texts in rows if (note := failure_note(*texts))}

    # -- home, comparisons, trends, decisions ----------------------------------------------------------
    def home_page(self, facets: list, due: dict[str, Any], problems: list[Any]) -> Page:
        recent = [
            dict(_row(row), href=self.href(self.paths[row["id"]], 0), why=self.failure_notes.get(row["id"]))
            for row in list_entries(self.db, Filters(), limit=RECENT)
        ]
        total = index_site.entry_count(self.db)
        shown = {"kind", "status", "backend", "workload", "failure"}
        context = {
            "total": total,
            "recent": recent,
            "facets": [facet for facet in facets if facet[0] in shown],
            "due": [
                {
                    "id": d.decision.id,
                    "title": d.decision.title,
                    "reasons": d.reasons,
                    "href": self.href(self.paths[d.decision.id], 0),
                }
                for d in due.values()
                if d.decision.id in self.paths
            ],
            "problems": broken_files(problems, self.kb.entries_path),
            "workloads": self.compared_workloads(),
            "board": site_answers.board_view(self.db, self.kb.config.answers.incumbent, self.paths, 0),
        }
        return Page("index.html", "home.html", digest("home", context), lambda: context)

    def compared_workloads(self) -> list[str]:
        return index_site.compared_workloads(self.db)

    def comparison_pages(self) -> Iterator[Page]:
        from kb.answers.compare import compare

        workloads = self.compared_workloads()
        index = {
            "workloads": [(w, f"{slug(w)}.html") for w in workloads],
            "board": site_answers.board_view(self.db, self.kb.config.answers.incumbent, self.paths, 1),
        }
        yield Page("compare/index.html", "compare_index.html", digest("compare-index", index), lambda: index)
        for workload in workloads:
            rows = [(row["id"], row["sha256"]) for row in newest_per_group(self.db, workload)]
            path = f"compare/{slug(workload)}.html"

            def context(rows: list = rows, workload: str = workload) -> dict[str, Any]:
                # Never a failed, killed or running run beside the others, nor as the baseline.
                incumbent = self.kb.config.answers.incumbent
                entries, left_out = site_answers.usable_first([self.entry(row[0]) for row in rows], incumbent)
                comparison = compare(entries) if len(entries) > 1 else None
                return {
                    "workload": workload,
                    "entries": [(e, self.href(self.paths[e.id], 1)) for e in entries],
                    "comparison": comparison,
                    "left_out": left_out,
                }

            yield Page(path, "compare.html", digest("compare", path, rows), context)

    def trend_pages(self) -> Iterator[Page]:
        workloads = self.compared_workloads()
        index = {"workloads": [(w, f"{slug(w)}.html") for w in workloads]}
        yield Page("trends/index.html", "trends_index.html", digest("trends-index", index), lambda: index)
        # A trend page shows what its workload's entries hold: keyed by those files, computed only when they
        # changed (working out every trend to see whether a page changed would cost seconds on every build).
        inputs: dict[str, list[tuple[str, str]]] = {}
        for workload, entry_id, sha in index_site.trend_inputs(self.db):
            inputs.setdefault(workload, []).append((entry_id, sha))
        for workload in workloads:
            path = f"trends/{slug(workload)}.html"
            yield Page(
                path, "trends.html", digest("trend", path, inputs.get(workload)), lambda w=workload: self._trends(w)
            )

    def _trends(self, workload: str) -> dict[str, Any]:
        from kb.answers.trend import trend
        from kb.website.charts import trend_svg

        names = index_site.trended_names(self.db, workload)
        results = []
        for name in names:
            try:
                result = trend(self.db, name, workload, package="torch")
            except KbError:
                continue
            if result.series:
                results.append((name, result))
        groups = sorted({s.group or "" for _, r in results for s in r.series})
        colours = {group or None: index for index, group in enumerate(groups)}
        charts = []
        for name, result in results:
            title = f"{name} of {workload} across torch versions, by backend and mode ({result.better} is better)"
            series = [
                {
                    "group": s.group or "all",
                    "points": [(p.version, f"{p.value:.4g}", p.count, p.flag) for p in s.points],
                }
                for s in result.series
            ]
            charts.append({"name": name, "title": title, "svg": trend_svg(result, title, colours), "series": series})
        return {"workload": workload, "charts": charts}

    def decisions_page(self, due: dict[str, Any]) -> Page:
        decisions = []
        for entry_id, title, recorded, front_matter in index_site.decisions(self.db):
            section = json.loads(front_matter).get("decision") or {}
            state = due.get(entry_id)
            decisions.append(
                {
                    "id": entry_id,
                    "title": title,
                    "recorded": recorded,
                    "href": self.href(self.paths[entry_id], 0),
                    "status": section.get("status"),
                    "choice": section.get("choice"),
                    "question": section.get("question"),
                    "triggers": section.get("triggers") or [],
                    "reasons": state.reasons if state else [],
                    "evidence": site_answers.decision_evidence(
                        self.db, site_answers.evidence_ids(json.loads(front_matter)), self.paths
                    ),
                    "fired_by": site_answers.fired_by(self.db, state.entries, self.paths) if state else [],
                }
            )
        context = {"decisions": decisions}
        return Page("decisions.html", "decisions.html", digest("decisions", context), lambda: context)


def facet_path(dim: str, value: str) -> str:
    folder = dim.replace("package:", "version-")
    return f"list/{folder}/{slug(value)}.html"


def _macro(name: str) -> Any:
    from kb.website.render import environment  # it renders pages: imported here, where a page needs a piece

    return getattr(environment("/").get_template("macros.html").module, name)


def _row(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row[name] for name in COLUMNS if name != "path"} | {"recorded": row["recorded"][:10]}


def _pager(stem: str, number: int, pages: int) -> dict[str, Any] | None:
    if pages == 1:
        return None

    def name(n: int) -> str:
        return f"{stem}.html" if n == 1 else f"{stem}-{n}.html"

    return {
        "number": number,
        "pages": pages,
        "previous": name(number - 1) if number > 1 else None,
        "next": name(number + 1) if number < pages else None,
    }


def _split_output(body: str) -> tuple[str, str]:
    """The body before its `## Output` section, and that section (shown collapsed: logs are long)."""
    match = _OUTPUT.search(body)
    if match is None:
        return body, ""
    return body[: match.start()], body[match.end() :].strip("\n")


def _phases(timings: dict[str, Any]) -> list[tuple[str, str]]:
    from kb.humanize import duration

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


def broken_files(problems: list[Any], entries: Path) -> list[tuple[str, list[str]]]:
    """(file, its problems) for the home page: paths relative to the entries folder, never the builder's own."""
    found: dict[str | None, list[str]] = {}
    for problem in problems:
        path = Path(problem.path) if problem.path is not None else None
        name = path.relative_to(entries).as_posix() if path and path.is_relative_to(entries) else path and path.name
        where = f"line {problem.line}: " if problem.line is not None else ""
        found.setdefault(name, []).append(f"{where}{problem.field + ': ' if problem.field else ''}{problem.message}")
    return sorted(((name or "an entry", texts) for name, texts in found.items()))
