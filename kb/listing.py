"""Listing entries straight from the files, newest first (the index makes this fast for large bases)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kb.entry import Entry
from kb.errors import Problem
from kb.store import KnowledgeBase


@dataclass
class Listed:
    entries: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def list_entries(
    kb: KnowledgeBase,
    kind: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    settle: Callable[[KnowledgeBase, Iterable[Entry]], list[Entry]] | None = None,
) -> Listed:
    """Entries matching kind and status, newest recorded first; `settle` may update entries first (orphans)."""
    listed = Listed()
    entries = list(kb.iter_entries(listed.problems))
    if settle is not None:
        entries = settle(kb, entries)
    entries = [e for e in entries if (kind is None or e.kind == kind) and (status is None or e.status == status)]
    entries.sort(key=lambda e: (e.recorded, e.id), reverse=True)
    listed.entries = entries[:limit] if limit else entries
    return listed
