"""What every page kind needs: the page record, its key, file names, and the index read once per build.

Entry pages depend only on their entry file (and its attachments), so their key is known without
reading the entry: unchanged ones are not rendered again. Every other page gathers its data from the
SQLite index; its key is a hash of that data, so a page is rendered only when what it shows changed.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any

from kb.errors import Problem
from kb.index import site as index_site
from kb.index import stored_json
from kb.index.query import COLUMNS, version_key
from kb.model import frontmatter
from kb.model.entry import Entry
from kb.model.validation import clipped
from kb.store.knowledge_base import KnowledgeBase
from kb.website.why import failure_note

# Packages whose versions get facet pages: PyTorch and the backend stacks people compare across releases.
FACET_PACKAGES = ("torch", "torch-xla", "torch-neuronx", "neuronx-cc", "torch-tpu", "libtpu", "jax", "triton")
FACETS = (
    ("kind", "Kind", "e.kind"), ("status", "Status", "e.status"), ("backend", "Backend", "e.backend"),
    ("workload", "Workload", "e.workload"), ("mode", "Mode", "e.mode"), ("failure", "Failure class", "e.failure_class"),
)  # fmt: skip
_SLUG = re.compile(r"[^A-Za-z0-9._+-]+")


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


@dataclass(frozen=True)
class Build:
    """What a build hands every publisher besides the index: decisions due (or unreadable), broken files, where it
    is served, and the day it was built for."""

    due: dict[str, Any]  # decision id -> its revisit state (kb.answers.decisions.due)
    problems: list[Problem]
    base_url: str
    today: date = field(default_factory=date.today)  # the day the decisions' dates are checked against
    unreadable: dict[str, str] = field(default_factory=dict)  # decision id -> why its reviews cannot be read


def digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def slug(value: str) -> str:
    """A file name for a facet value; values that had to change get a short hash so two never collide."""
    clean = _SLUG.sub("-", value).strip("-.") or "value"
    return clean if clean == value else f"{clean[:60]}-{hashlib.sha256(value.encode()).hexdigest()[:6]}"


def entry_page_path(entries_relative: str) -> str:
    return f"entries/{entries_relative.removesuffix('.md')}.html"  # entry files end in .md (KnowledgeBase.scan)


def facet_path(dim: str, value: str) -> str:
    folder = dim.replace("package:", "version-")
    return f"list/{folder}/{slug(value)}.html"


def href(target: str, depth: int) -> str:
    return "../" * depth + target


# The most characters of one field a list shows: a row is copied onto every list page of its facets.
LIST_CHARS = 200


def list_row(row: dict[str, Any]) -> dict[str, Any]:
    """An index row as a list shows it (the home page's recent entries, the lists): each text at most LIST_CHARS
    (the entry page shows the whole title)."""
    shown = {name: row[name] for name in COLUMNS if name != "path"}
    shown = {name: clipped(value, LIST_CHARS) if isinstance(value, str) else value for name, value in shown.items()}
    return shown | {"recorded": row["recorded"][:10]}


class Site:
    """One knowledge base's index, and what several page kinds read from it, read once per build."""

    def __init__(self, kb: KnowledgeBase, db: sqlite3.Connection):
        self.kb = kb
        self.db = db
        self.paths = {entry_id: entry_page_path(path) for entry_id, path in index_site.entry_paths(db)}

    def entry(self, entry_id: str) -> Entry:
        """An entry as indexed (its front matter was parsed and checked then), with its body from the file."""
        path, front_matter = index_site.front_matter(self.db, entry_id)
        file = self.kb.entries_path / path
        _, body, _ = frontmatter.split(file.read_text("utf-8"), file)
        return Entry(data=stored_json.loads(front_matter), body=body, path=file)

    @cached_property
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

    @cached_property
    def failure_notes(self) -> dict[str, str]:
        """Each failed entry's reason in one line, for the lists; a completed run whose numerics failed says so,
        since its status alone reads as a result."""
        from kb.answers.figures import nonfinite, numerics
        from kb.index.answers import board_entries

        notes = {}
        for row in board_entries(self.db):
            if row["facts"] and numerics(row["facts"]) == "failed":
                why = nonfinite(row["facts"])
                notes[row["id"]] = "numerics failed" + (f": {why}" if why else "")
        rows = index_site.failure_texts(self.db)
        return notes | {entry_id: note for entry_id, *texts in rows if (note := failure_note(*texts))}

    def compared_workloads(self) -> list[str]:
        return index_site.compared_workloads(self.db)


class Publisher(ABC):
    """One kind of page: every page of that kind, each with its key and how to gather what it shows."""

    def __init__(self, site: Site):
        self.site = site

    @abstractmethod
    def pages(self, build: Build) -> Iterable[Page]: ...
