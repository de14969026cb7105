"""Decisions and their revisit triggers, and the question kb answers about them: which are due?

A decision entry names its evidence (entry ids) and its triggers, written in a small form that people
can read and edit in the front matter:

    release: torch-neuronx                                        a newer release of the package is recorded
    when: compile_s < 600 for workload=gpt-oss-train backend=neuron   new runs meet a condition, by their interval
    when: step_s faster by 10% for workload=gpt-oss-train backend=neuron   new runs beat the older ones by that much
    after: 2027-03-01                                             a date has passed
    newer-evidence                                                any newer run of the same workload and backend

A `when:` trigger is judged as every comparison kb prints is (kb.answers.verdict): on repeated comparable runs
(completed, measured, off a busy machine, the same shapes, device count and way of timing), never on one run.
A condition holds when the whole 95% interval of the new runs' median meets it; "faster by 10%" holds when the
verdict of the new runs against those recorded before is faster with 10% as the floor.
"""

from __future__ import annotations

import math
import operator
import re
import sqlite3
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from kb.answers import verdict
from kb.errors import EntryError, KbError
from kb.index import answers
from kb.model.entry import Entry, entry_now, iso
from kb.store.reading import read_entry_bytes
from kb.store.reviews import CONFLICT, REVIEWS, instant, reviews_of

DECISION_STATUSES = ("proposed", "accepted", "rejected", "superseded")
OPEN_STATUSES = ("proposed", "accepted")  # the ones worth revisiting
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
FILTER_COLUMNS = answers.WHEN_COLUMNS
FORMS = ("release: PACKAGE", "when: NAME OP NUMBER [for key=value ...]",
         "when: NAME faster|slower by N% [for key=value ...]", "after: YYYY-MM-DD", "newer-evidence")  # fmt: skip
_WHEN = re.compile(
    r"(?P<name>[A-Za-z0-9_:+-]+)\s*(?:(?P<op><=|>=|==|!=|<|>)\s*(?P<value>[-+]?\d+(?:\.\d+)?)"
    r"|\s+(?P<direction>faster|slower)\s+by\s+(?P<percent>\d+(?:\.\d+)?)\s*%)"
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
    direction: str | None = None  # `faster by N%` / `slower by N%`: value is N as a fraction


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
        if match["direction"]:
            return Trigger("when", clean, name=match["name"], value=float(match["percent"]) / 100, filters=filters,
                           direction=match["direction"])  # fmt: skip
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
class TriggerState:
    """One trigger as it stands: whether it fired, why, the entries behind it, and the value it watches now."""

    text: str
    fired: bool
    reason: str | None = None
    entries: list[str] = field(default_factory=list)  # the runs and releases behind it, to look at
    current: str | None = None  # `when:` triggers: where the figure stands now, whichever side it is on
    runs: list[str] = field(default_factory=list)  # the run entries behind it
    releases: list[str] = field(default_factory=list)  # the release entries behind it
    comparison: dict[str, Any] | None = None  # `faster by`: kb.answers.verdict.Verdict; a condition: its interval


@dataclass
class Due:
    """A decision that should be looked at again, with one line per reason and the entries behind them."""

    decision: Entry
    reasons: list[str]
    entries: list[str]
    fired: list[TriggerState] = field(default_factory=list)  # each fired trigger, with its runs and releases


@dataclass
class DecisionState:
    """Everything `kb show` and the decision page say about a decision's revisit."""

    id: str
    status: str | None
    due: bool
    triggers: list[TriggerState]
    last_review: dict[str, Any] | None
    untriggered: bool  # no trigger at all: it never comes due by itself

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def due(decisions: list[Entry], db: sqlite3.Connection, today: date) -> list[Due]:
    found = []
    for decision in decisions:
        if (decision.data.get("decision") or {}).get("status") not in OPEN_STATUSES:
            continue
        fired = [state for state in trigger_states(decision, db, today) if state.fired]
        if fired:
            entries = list(dict.fromkeys(e for state in fired for e in state.entries))
            found.append(Due(decision, [state.reason or state.text for state in fired], entries, fired))
    return found


def decision_state(decision: Entry, db: sqlite3.Connection, today: date) -> DecisionState:
    section = decision.data.get("decision") or {}
    states = trigger_states(decision, db, today)
    open_ = section.get("status") in OPEN_STATUSES
    return DecisionState(
        id=decision.id,
        status=section.get("status"),
        due=open_ and any(state.fired for state in states),
        triggers=states,
        last_review=_last_review(decision),
        untriggered=not states,
    )


def trigger_states(decision: Entry, db: sqlite3.Connection, today: date) -> list[TriggerState]:
    texts = (decision.data.get("decision") or {}).get("triggers") or []
    return [_check(parse_trigger(text), decision, db, today) for text in texts]


def evidence_of(decision: Entry) -> list[str]:
    links = decision.data.get("links") or {}
    evidence = links.get("evidence") or []
    return [evidence] if isinstance(evidence, str) else list(evidence)


def _last_review(decision: Entry) -> dict[str, Any] | None:
    reviews = reviews_of(decision)
    return reviews[-1] if reviews else None


def _looked_at(decision: Entry) -> str:
    """When the decision was last looked at (its last review, else when it was recorded), as an `instant`."""
    review = _last_review(decision)
    if review:
        return instant(str(review.get("time") or review.get("date")))
    section = decision.data.get("decision") or {}
    return instant(str(section.get("time") or decision.recorded))


def release_instant(release: dict[str, Any]) -> str:
    """When a release came out, as an `instant`: its own date when it was recorded on another day (back-dated or
    ahead), else the moment it was recorded (precisely, where kept)."""
    day = str(release.get("date") or "")[:10]
    recorded = str(release.get("recorded") or "")
    if day and day != recorded[:10]:
        return instant(day)
    return instant(str(release.get("time") or recorded))


def _check(trigger: Trigger, decision: Entry, db: sqlite3.Connection, today: date) -> TriggerState:
    since = _looked_at(decision)
    if trigger.kind == "after":
        passed = trigger.day is not None and today >= trigger.day
        return TriggerState(trigger.text, passed, f"the revisit date {trigger.day} has passed" if passed else None)
    if trigger.kind == "release":
        return _release(trigger, decision, db)
    if trigger.kind == "newer-evidence":
        newer: list[str] = []
        for workload, backend in answers.workload_backend_pairs(db, evidence_of(decision)):
            newer += answers.runs_after(db, workload, backend, since)
        if newer:
            reason = f"{len(newer)} newer run{'s' if len(newer) > 1 else ''} of the same workload and backend"
            return TriggerState(trigger.text, True, reason, newer, runs=newer)
        return TriggerState(trigger.text, False)
    return _when(trigger, since, db)


def _release(trigger: Trigger, decision: Entry, db: sqlite3.Connection) -> TriggerState:
    """A release newer than the evidence's version of the package; when the evidence names no version (a
    report, say), or the decision supersedes another, a release recorded after the decision. Either way,
    after its last review, if any."""
    from packaging.version import InvalidVersion, Version

    package = trigger.package or ""

    def key(text: Any) -> Version | None:
        try:
            return Version(str(text))
        except InvalidVersion:
            return None

    used = [v for v in answers.evidence_versions(db, package, evidence_of(decision)) if key(v) is not None]
    newest_used = max((key(v) for v in used), default=None)
    review = _last_review(decision)
    # A decision was made knowing the releases out before it (and a review, those before the review): only a
    # release that came out later, by its own date, makes it due.
    cutoff = _looked_at(decision)
    releases = answers.releases(db, package)
    precise = answers.front_matters(db, [str(r["id"]) for r in releases])
    newer = []
    for r in releases:
        version = key(r["version"])
        when = release_instant({**r, "time": ((precise.get(str(r["id"])) or {}).get("release") or {}).get("time")})
        if version is not None and (newest_used is None or version > newest_used) and when > cutoff:
            newer.append((version, r))
    if not newer:
        return TriggerState(trigger.text, False)
    _, release = max(newer, key=lambda item: item[0])
    basis = f"evidence uses {package} {max(used, key=key)}" if used else f"evidence names no {package} version"
    if review:
        basis += f", reviewed {str(review.get('date'))[:10]}"
    reason = f"{basis}; {release['version']} released on {str(release['date'] or release['recorded'])[:10]}"
    return TriggerState(trigger.text, True, reason, [release["id"]], releases=[release["id"]])


def _when(trigger: Trigger, since: str, db: sqlite3.Connection) -> TriggerState:
    """A condition on the runs recorded since the decision (or its last review), by the verdict rule: never one
    run; the comparable repeats of the newest run's configuration."""
    from kb.text.humanize import field

    name = trigger.name or ""
    before, after = _comparable_runs(db, name, trigger.filters, since)
    if not after:
        last = f"; the last before: {name} = {field(name, before[-1][1])} in {before[-1][0]}" if before else ""
        return TriggerState(trigger.text, False, current=f"no comparable run with {name} since it was decided{last}")
    ids = [entry_id for entry_id, _ in after]
    if trigger.direction:
        return _relative(trigger, [v for _, v in before], [v for _, v in after], ids, db)
    values = [v for _, v in after]
    low, high = _median_interval(values)
    median = statistics.median(values)
    condition = f"{name} {trigger.op} {trigger.value:g}"
    interval = f", 95% interval {field(name, low)} to {field(name, high)}" if low is not None else ""
    runs = f"{len(values)} run{'s' if len(values) > 1 else ''}"
    current = f"{name} = {field(name, median)}, the median of {runs} since{interval}"
    comparison = {"median": median, "n": len(values), "low": low, "high": high}
    if len(values) < verdict.MIN_RUNS or low is None or high is None:
        current += f" (too few runs: {verdict.MIN_RUNS} give an interval)"
        return TriggerState(trigger.text, False, current=current, comparison=comparison)
    if not _meets(trigger.op or "<", low, high, trigger.value or 0.0):
        return TriggerState(trigger.text, False, current=current, comparison=comparison)
    releases = _releases_of(db, ids)
    reason = f"new evidence meets {condition}: {current}"
    return TriggerState(trigger.text, True, reason, [*ids, *releases], current, ids, releases, comparison)


def _relative(
    trigger: Trigger, before: list[float], after: list[float], ids: list[str], db: sqlite3.Connection
) -> TriggerState:
    """`faster by 10%`: the verdict of the new runs against the older ones, with 10% as the floor."""
    from kb.answers.compare import guess_better

    name = trigger.name or ""
    higher = (guess_better(name, None) or "lower") == "higher"
    judged = verdict.judge(before, after, higher_is_better=higher, floor=trigger.value or 0.0)
    current = f"{name} since: {judged.text()}"
    if judged.verdict != trigger.direction:
        return TriggerState(trigger.text, False, current=current, comparison=judged.as_dict())
    releases = _releases_of(db, ids)
    reason = f"new evidence is {trigger.direction} by more than {trigger.value:.0%}: {name} {judged.text()}"
    return TriggerState(trigger.text, True, reason, [*ids, *releases], current, ids, releases, judged.as_dict())


def _comparable_runs(
    db: sqlite3.Connection, name: str, filters: tuple[tuple[str, str], ...], since: str
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(id, value) of the runs recorded up to `since` and after it, oldest first: completed, measured runs off a
    busy machine, of the newest such run's configuration (figures.configuration: hardware included), as the board
    pools repeats."""
    from kb.answers import figures

    rows = [
        (e, v, r) for e, v, r in answers.figure_after(db, name, "", filters) if figures.finite_number(v) is not None
    ]
    data = answers.front_matters(db, [e for e, _, _ in rows])

    def usable(entry_id: str) -> bool:
        found = data.get(entry_id) or {}
        source = (found.get("provenance") or {}).get("source") if isinstance(found.get("provenance"), dict) else None
        return found.get("kind") == "run" and found.get("status") == "completed" and source != "reported" and not (
            figures.busy(found))  # fmt: skip

    def setup(entry_id: str) -> tuple[Any, ...]:
        return figures.configuration(data.get(entry_id) or {})

    runs = [(e, float(v), r) for e, v, r in rows if usable(e)]
    newer = [run for run in runs if run[2] > since]
    if not newer:
        return [(e, v) for e, v, _ in runs], []
    wanted = setup(newer[-1][0])
    same = [(e, v, r) for e, v, r in runs if setup(e) == wanted]
    return [(e, v) for e, v, r in same if r <= since], [(e, v) for e, v, r in same if r > since]


def _median_interval(values: list[float]) -> tuple[float | None, float | None]:
    """The bootstrap 95% interval of the median of the runs (as kb.answers.verdict resamples), from MIN_RUNS."""
    if len(values) < verdict.MIN_RUNS:
        return None, None
    import warnings

    import numpy as np
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identical runs leave nothing to resample: the interval is the one value
        found = stats.bootstrap(
            (np.asarray(values),), np.median, n_resamples=verdict.RESAMPLES, method="percentile",
            confidence_level=verdict.CONFIDENCE, rng=np.random.default_rng(verdict.SEED),
        )  # fmt: skip
    low, high = float(found.confidence_interval.low), float(found.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        low = high = float(np.median(values))
    return round(low, 6), round(high, 6)


def _meets(op: str, low: float, high: float, value: float) -> bool:
    """Whether every value in the interval meets the condition."""
    if op == "==":
        return low == value == high
    if op == "!=":
        return not low <= value <= high
    return OPERATORS[op](high, value) if op in ("<", "<=") else OPERATORS[op](low, value)


def _releases_of(db: sqlite3.Connection, ids: list[str]) -> list[str]:
    """The release entries (kb release) of the versions the runs used, where one is recorded."""
    found: list[str] = []
    for versions in answers.entry_versions(db, ids).values():
        for package, version in versions.items():
            try:
                release = recorded_release(db, package, version)
            except ValueError:  # not a PEP 440 version: no release entry can name it
                continue
            if release and release not in found:
                found.append(release)
    return found


def review(kb: Any, ref: str, *, note: str, by: str | None, when: datetime) -> Entry:
    """Record that a decision was looked at again and kept (who, when, why) in a file of its own beside the
    decision (two people's reviews merge in git): the triggers then count only what came after. Nothing is
    written when the entry is not a decision."""
    import json

    from kb.store import atomic

    if not note.strip():
        raise KbError("--note: say what was re-checked, e.g. --note 're-checked on 2.27.1, still CUDA'")
    entry = kb.load(ref)
    if entry.kind != "decision":
        raise KbError(f"{entry.id} is a {entry.kind} entry, not a decision; only decisions are reviewed")
    from kb.model.ids import slugify

    folder = kb.attachments_path(entry) / REVIEWS
    folder.mkdir(parents=True, exist_ok=True)
    precise = when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    item = {"date": iso(when), "time": precise, **({"by": by} if by else {}), "note": note.strip()}
    name = f"{precise.replace(':', '')}-{slugify(by or 'someone')}.json"
    atomic.write_text(folder / name, json.dumps(item, ensure_ascii=False, indent=1) + "\n")
    return entry


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
    author: str | None = None,
    known: Known | None = None,
) -> Entry:
    """Write a decision entry (and mark the one it supersedes); everything is checked before anything is written."""
    if status not in DECISION_STATUSES:
        raise KbError(f"--status {status!r} is not one of: {', '.join(DECISION_STATUSES)}")
    for text in triggers:
        check_names(parse_trigger(text), known)
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
        "time": _precise_now(),  # the order of a decision and a release or review recorded in the same second
        "triggers": triggers or None,
    }
    links: dict[str, Any] = {}
    if evidence_ids:
        links["evidence"] = evidence_ids
    if previous is not None:
        links["supersedes"] = previous.id
    entry = kb.create(entry_now(title, "decision", author=author, links=links or None, decision=section))
    if previous is not None:
        previous.data.setdefault("decision", {})["status"] = "superseded"
        previous.data.setdefault("links", {})["superseded_by"] = entry.id
        kb.save(previous)
    return entry


def recorded_release(db: sqlite3.Connection, package: str, version: str) -> str | None:
    """The id of the release entry already recorded for package at version (2.28 and 2.28.0 are one), if any."""
    from packaging.version import InvalidVersion, Version

    wanted = Version(version)
    for row in answers.releases(db, package):
        try:
            if Version(str(row["version"])) == wanted:
                return str(row["id"])
        except InvalidVersion:
            continue
    return None


def new_release(
    kb: Any, package: str, version: str, *, when: date, url: str | None, notes: str | None, author: str | None = None
) -> Entry:
    """A release entry whose id carries the release's own date (a back-dated release is not one of today)."""
    from kb.model.entry import new_entry, utc_now
    from kb.model.ids import new_id

    title = f"{package} {version}"
    release = {"package": package, "version": version, "date": when.isoformat(), "time": _precise_now(),
               "url": url, "notes": notes}  # fmt: skip
    release = {key: value for key, value in release.items() if value is not None}
    day = datetime(when.year, when.month, when.day, tzinfo=timezone.utc)
    entry = new_entry(new_id(title, day), title, "release", recorded=iso(utc_now()), author=author, release=release)
    return kb.create(entry)


def _precise_now() -> str:
    from kb.model.entry import utc_now

    return utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Known:
    """The names a trigger may use: those the knowledge base holds (and the packages kb knows of per backend)."""

    workloads: frozenset[str]
    backends: frozenset[str]
    figures: frozenset[str]
    packages: frozenset[str]


def known_names(db: sqlite3.Connection) -> Known:
    from kb.answers.board import BACKEND_PACKAGES
    from kb.answers.expectations import COUNTERS
    from kb.answers.figures import HEADLINES, ONE_OFF
    from kb.index.rows import normalise_package

    packages = {normalise_package(p) for found in BACKEND_PACKAGES.values() for p in found}
    return Known(
        frozenset(answers.workload_names(db)),
        frozenset(answers.backend_names(db)),
        frozenset({*answers.figure_names(db), *HEADLINES, *ONE_OFF, *COUNTERS}),
        frozenset(packages | answers.package_names(db)),
    )


def check_names(trigger: Trigger, known: Known | None) -> None:
    """A trigger that names a workload, backend, figure or package the knowledge base does not know can never
    fire: refused, with the nearest known names."""
    from kb.answers.names import did_you_mean
    from kb.index.rows import normalise_package

    if known is None:
        return
    asked: list[tuple[str, str, frozenset[str]]] = []
    if trigger.kind == "release" and trigger.package:
        asked.append(("package", normalise_package(trigger.package), known.packages))
    if trigger.kind == "when":
        asked.append(("figure", trigger.name or "", known.figures))
        for key, value in trigger.filters:
            if key in ("workload", "backend"):
                asked.append((key, value, known.workloads if key == "workload" else known.backends))
    for what, name, names in asked:
        if name not in names:
            raise KbError(f"trigger {trigger.text!r}: no {what} {name!r} in this knowledge base, so it could never "
                          f"fire{did_you_mean(name, names)}")  # fmt: skip


def unreadable_decisions(problems: list[Any]) -> list[tuple[str, str]]:
    """(file, what is wrong) of the entry files the index could not read that hold a decision (or a git conflict,
    which may hide one): a decision that cannot be read can never come due, so it must not pass unseen."""
    found = []
    for problem in problems:
        try:  # only a regular file of an entry's size: a FIFO named like an entry would block for good
            text = read_entry_bytes(Path(problem.path)).decode("utf-8", errors="replace")
        except (OSError, EntryError):
            continue
        conflicted = CONFLICT.search(text) is not None
        if conflicted or re.search(r"(?m)^kind:\s*decision\s*$", text):
            what = "git conflict markers" if conflicted else problem.message
            where = f"{problem.path}:{problem.line}" if problem.line else str(problem.path)
            found.append((where, what))
    return found
