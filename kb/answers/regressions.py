"""Regressions across releases, as an infrastructure engineer needs them: what stopped working (a run or
test case that completed on the older release and fails on the newer) apart from what got slower.

The release is the backend's own package where runs record it (torch-neuronx for neuron, torch-xla for
xla ...), else torch; local labels (`+cu126`) fold into their release. Only comparable runs pair: the same
workload, backend, mode, shapes (batch, dtype ...) and device count, ordered by release, and the failing run
recorded after the passing one. A run its user interrupted (Ctrl-C) is no evidence of anything. What got
slower is located by change points (kb.answers.changepoints): the last good and the first bad release, with the
change's interval by the one verdict rule.
"""

from __future__ import annotations

import itertools
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kb.answers import figures
from kb.answers.board import backend_package
from kb.answers.changepoints import Change, changes, release_in
from kb.answers.compare import case_changes
from kb.answers.verdict import FLOOR
from kb.index import answers
from kb.index.query import version_key
from kb.model.entry import Entry


@dataclass
class Breakage:
    """Worked on `before`, fails on `after`: a whole run, or test cases of a coverage entry."""

    workload: str
    backend: str
    mode: str | None
    package: str
    before: str  # release
    after: str
    passed_entry: str
    failed_entry: str
    failure: str  # the failure class, or "N cases newly failing"
    cases: list[str] = field(default_factory=list)


@dataclass
class Regressions:
    breakages: list[Breakage]
    slowdowns: list[Change]  # what got slower, located by kb.answers.changepoints

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


NOT_EVIDENCE = ("interrupted", "running")  # a user's Ctrl-C, a run still going


def regressions(
    db: sqlite3.Connection, entries_path: Path, workload: str | None = None, floor: float = FLOOR
) -> Regressions:
    rows = [
        r for r in answers.workload_evidence(db, workload)
        if r["kind"] in ("run", "coverage") and r["source"] != "reported" and r["status"] not in NOT_EVIDENCE
    ]  # fmt: skip
    by_backend: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_backend.setdefault((row["workload"], row["backend"] or "?"), []).append(row)
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    packages: dict[str, set[tuple[str, str]]] = {}
    for (name, backend), found in by_backend.items():
        package = backend_package(backend, found) or "torch"
        packages.setdefault(name, set()).add((backend, package))
        for row in reversed(found):  # oldest first
            release = release_in(row["data"], package)
            if release is None:
                continue
            row = dict(row, release=release, package=package)
            data = row["data"]
            setup = figures.configuration(data, timing=False)  # a pass and a failure on the same hardware
            cells.setdefault((name, backend, row["mode"], row["kind"], *setup), []).append(row)
    breakages: list[Breakage] = []
    for (name, backend, mode, kind, *_), found in sorted(cells.items(), key=lambda item: tuple(map(str, item[0]))):
        newest: dict[str, dict[str, Any]] = {}
        for row in found:  # oldest first: the newest run of each release wins
            newest[row["release"]] = row
        releases = sorted(newest, key=version_key)
        for before, after in itertools.pairwise(releases):
            old, new = newest[before], newest[after]
            if (old["recorded"], old["id"]) > (new["recorded"], new["id"]):
                continue  # the newer release's run came first: no "was" and "now" in that order
            if kind == "run" and old["status"] == "completed" and new["status"] != "completed":
                failure = new["failure_class"] or new["status"] or "failed"
                breakages.append(
                    Breakage(name, backend, mode, old["package"], before, after, old["id"], new["id"], failure)
                )
            elif kind == "coverage":
                breakages += _cases(db, entries_path, name, backend, mode, old, new)
    return Regressions(breakages, _slowdowns(by_backend, packages, floor))


def _cases(
    db: sqlite3.Connection, entries_path: Path, workload: str, backend: str, mode: str | None, old: dict, new: dict
) -> list[Breakage]:
    paths = [answers.entry_path(db, row["id"]) for row in (old, new)]
    if None in paths:
        return []
    entries = [Entry.read(entries_path / str(path)) for path in paths]
    changes = case_changes(entries)
    if not changes or not changes[0].newly_failing:
        return []
    failing = changes[0].newly_failing
    failure = f"{len(failing)} case{'s' if len(failing) > 1 else ''} newly failing"
    return [Breakage(workload, backend, mode, old["package"], old["release"], new["release"], old["id"], new["id"],
                     failure, failing)]  # fmt: skip


def _slowdowns(
    by_backend: dict[tuple[str, str], list[dict[str, Any]]], packages: dict[str, set[tuple[str, str]]], floor: float
) -> list[Change]:
    """What got slower in each workload's headline figure, across the releases of each backend's package."""
    found = []
    for (name, backend), rows in sorted(by_backend.items()):
        for package in sorted(p for b, p in packages[name] if b == backend):
            found += [change for change in changes(name, package, rows, floor) if change.verdict == "slower"]
    return found
