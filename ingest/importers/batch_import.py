"""Imports that make many entries at once (MLflow stores, TensorBoard log folders): every run that reads becomes
an entry, each run or file that does not is reported by name, and the rest are still imported."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.describe import RunInfo
from ingest.importers.imported import Imported, create_imported
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase


@dataclass
class Outcome:
    entries: list[Entry] = field(default_factory=list)
    already: int = 0  # runs imported before (an import run twice makes no duplicates)
    problems: list[str] = field(default_factory=list)  # one line per run or file that could not be read


def create_each(
    kb: KnowledgeBase, items: Iterable[tuple[str, Imported | None, str | None]], info: RunInfo, tool: str
) -> Outcome:
    """An entry for each (label, imported, problem) read; a problem (beside the entry when one was read too), or an
    entry kb refuses, is reported by label."""
    outcome = Outcome()
    for label, imported, problem in items:
        if problem:
            outcome.problems.append(f"{label}: {problem}")
        if imported is None:
            continue
        try:
            outcome.entries.append(create_imported(kb, imported, info, tool=tool))
        except Exception as refused:  # an invalid field from the store: that run only
            outcome.problems.append(f"{label}: not imported: {refused}")
    return outcome
