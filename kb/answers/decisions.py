"""Decisions and their revisit triggers, and the question kb answers about them: which are due?

A decision entry names its evidence (entry ids) and its triggers, written in a small form that people
can read and edit in the front matter:

    release: torch-neuronx                                        a newer release of the package is recorded
    when: compile_s < 600 for workload=gpt-oss backend=neuron     new evidence meets a condition
    after: 2027-03-01                                             a date has passed
    newer-evidence                                                any newer run of the same workload and backend
"""

from __future__ import annotations

import operator
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from kb.entry import Entry, entry_now
from kb.errors import KbError

DECISION_STATUSES = ("proposed", "accepted", "rejected", "superseded")
OPEN_STATUSES = ("proposed", "accepted")  # the ones worth revisiting
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
FILTER_COLUMNS = {"workload", "backend", "mode", "status", "kind"}
FORMS = ("release: PACKAGE", "when: NAME OP NUMBER [for key=value ...]", "after: YYYY-MM-DD", "newer-evidence")
_WHEN = re.compile(
    r"(?P<name>[A-Za-z0-9_:+-]+)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>[-+]?\d+(?:\.\d+)?)"
    r"(?:\s+for\s+(?P<filters>.+))?\Z"
)


@dataclass(frozen=True)
class Trigger:
    kind: str  # release, when, after, newer-evidence
    text: str
    package: str | None = None
    name: str | None = None
    op: str | None = None
    value: float | None = None
    filters: tuple[tuple[str, str], ...] = ()
    day: date | None = None


def parse_trigger(text: str) -> Trigger:
    """Read one trigger; a malformed one raises a KbError listing the forms."""
    clean = text.strip()
    head, _, rest = clean.partition(":")
    rest = rest.strip()
    if clean == "newer-evidence":
        return Trigger("newer-evidence", clean)
    if head == "release" and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", rest):
        return Trigger("release", clean, package=rest)
    if head == "after":
        try:
            return Trigger("after", clean, day=date.fromisoformat(rest))
        except ValueError:
            pass
    if head == "when" and (match := _WHEN.match(rest)):
        filters = tuple(_filter(part, clean) for part in (match["filters"] or "").split())
        return Trigger("when", clean, name=match["name"], op=match["op"], value=float(match["value"]), filters=filters)
    raise KbError(f"trigger {text!r} does not parse; the forms are: {'; '.join(FORMS)}")


def _filter(part: str, text: str) -> tuple[str, str]:
    key, sep, value = part.partition("=")
    if not sep or key not in FILTER_COLUMNS or not value:
        raise KbError(
            f"trigger {text!r}: {part!r} should be key=value with key one of {', '.join(sorted(FILTER_COLUMNS))}"
        )
    return key, value


@dataclass
class Due:
    """A decision that should be looked at again, with one line per reason and the entries behind them."""

    decision: Entry
    reasons: list[str]
    entries: list[str]


def due(decisions: list[Entry], db: sqlite3.Connection, today: date) -> list[Due]:
    found = []
    for decision in decisions:
        section = decision.data.get("decision") or {}
        if section.get("status") not in OPEN_STATUSES:
            continue
        reasons: list[str] = []
        entries: list[str] = []
        for text in section.get("triggers") or []:
            reason, ids = _check(parse_trigger(text), decision, db, today)
            if reason:
                reasons.append(reason)
                entries.extend(i for i in ids if i not in entries)
        if reasons:
            found.append(Due(decision, reasons, entries))
    return found


def _evidence(decision: Entry) -> list[str]:
    links = decision.data.get("links") or {}
    evidence = links.get("evidence") or []
    return [evidence] if isinstance(evidence, str) else list(evidence)


def _check(trigger: Trigger, decision: Entry, db: sqlite3.Connection, today: date) -> tuple[str | None, list[str]]:
    since = decision.recorded
    if trigger.kind == "after":
        return (f"the revisit date {trigger.day} has passed", []) if today >= trigger.day else (None, [])
    if trigger.kind == "release":
        return _release(trigger.package or "", decision, db)
    if trigger.kind == "newer-evidence":
        pairs = db.execute(
            "SELECT DISTINCT workload, backend FROM entries WHERE id IN (SELECT value FROM json_each(?))",
            [_json(_evidence(decision))],
        ).fetchall()
        newer = []
        for workload, backend in pairs:
            newer += [
                row[0]
                for row in db.execute(
                    "SELECT id FROM entries WHERE kind = 'run' AND workload IS ? AND backend IS ? AND recorded > ? "
                    "ORDER BY recorded",
                    [workload, backend, since],
                )
            ]
        if newer:
            return f"{len(newer)} newer run{'s' if len(newer) > 1 else ''} of the same workload and backend", newer
        return None, []
    return _when(trigger, since, db)


def _release(package: str, decision: Entry, db: sqlite3.Connection) -> tuple[str | None, list[str]]:
    from packaging.version import InvalidVersion, Version

    from kb.index.rows import normalise_package

    name = normalise_package(package)
    used = [
        row[0]
        for row in db.execute(
            "SELECT version FROM versions WHERE package = ? AND entry_id IN (SELECT value FROM json_each(?))",
            [name, _json(_evidence(decision))],
        )
    ]
    releases = db.execute(
        "SELECT e.id, json_extract(e.front_matter, '$.release.version'), e.recorded FROM entries e "
        "WHERE e.kind = 'release' AND json_extract(e.front_matter, '$.release.package') IN (?, ?)",
        [package, name],
    ).fetchall()

    def key(text: str) -> Any:
        try:
            return Version(text)
        except InvalidVersion:
            return None

    known = [key(v) for v in used if key(v) is not None]
    newest_used = max(known) if known else None
    newer = [
        (key(v), i, v, r)
        for i, v, r in releases
        if key(v) is not None and (newest_used is None or key(v) > newest_used)
    ]
    if not newer:
        return None, []
    _, entry_id, version, recorded = max(newer)
    basis = (
        f"evidence uses {package} {max(used, key=key)}" if used and known else f"evidence names no {package} version"
    )
    return f"{basis}; {version} recorded on {recorded[:10]}", [entry_id]


def _when(trigger: Trigger, since: str, db: sqlite3.Connection) -> tuple[str | None, list[str]]:
    clauses = ["e.recorded > ?"]
    params: list[Any] = [since]
    for key, value in trigger.filters:
        clauses.append(f"e.{key} = ?")
        params.append(value)
    value_sql = (
        "COALESCE((SELECT value FROM metrics m WHERE m.entry_id = e.id AND m.name = ?), "
        "(SELECT seconds FROM timings t WHERE t.entry_id = e.id AND t.name = ?))"
    )
    rows = db.execute(
        f"SELECT e.id, {value_sql} AS v FROM entries e WHERE {' AND '.join(clauses)} ORDER BY e.recorded",
        [trigger.name, trigger.name, *params],
    ).fetchall()
    compare = OPERATORS[trigger.op or "<"]
    meeting = [(entry_id, value) for entry_id, value in rows if value is not None and compare(value, trigger.value)]
    if not meeting:
        return None, []
    entry_id, value = meeting[0]
    condition = f"{trigger.name} {trigger.op} {trigger.value:g}"
    more = f" (and {len(meeting) - 1} more)" if len(meeting) > 1 else ""
    return f"new evidence {entry_id} meets {condition} ({trigger.name} = {value:g}){more}", [e for e, _ in meeting]


def _json(values: list[str]) -> str:
    import json

    return json.dumps(values)


def new_decision(
    kb: Any,
    *,
    title: str,
    question: str,
    choice: str,
    alternatives: list[str],
    rationale: str | None,
    evidence: list[str],
    status: str,
    owner: str | None,
    triggers: list[str],
    supersedes: str | None,
    when: date,
) -> Entry:
    """Write a decision entry (and mark the one it supersedes); everything is checked before anything is written."""
    if status not in DECISION_STATUSES:
        raise KbError(f"--status {status!r} is not one of: {', '.join(DECISION_STATUSES)}")
    for text in triggers:
        parse_trigger(text)
    evidence_ids = [kb.load(ref).id for ref in evidence]
    previous = kb.load(supersedes) if supersedes else None
    if previous is not None and previous.kind != "decision":
        raise KbError(f"--supersedes {previous.id}: that is a {previous.kind} entry, not a decision")
    section = {
        "question": question,
        "choice": choice,
        "alternatives": alternatives or None,
        "rationale": rationale,
        "status": status,
        "owner": owner,
        "date": when.isoformat(),
        "triggers": triggers or None,
    }
    links: dict[str, Any] = {}
    if evidence_ids:
        links["evidence"] = evidence_ids
    if previous is not None:
        links["supersedes"] = previous.id
    entry = kb.create(entry_now(title, "decision", links=links or None, decision=section))
    if previous is not None:
        previous.data.setdefault("decision", {})["status"] = "superseded"
        previous.data.setdefault("links", {})["superseded_by"] = entry.id
        kb.save(previous)
    return entry


def new_release(kb: Any, package: str, version: str, *, when: date, url: str | None, notes: str | None) -> Entry:
    release = {"package": package, "version": version, "date": when.isoformat(), "url": url, "notes": notes}
    return kb.create(entry_now(f"{package} {version}", "release", release=release))
