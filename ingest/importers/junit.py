"""Test results written as JUnit XML (pytest --junitxml and other producers) as a coverage entry.

The files are streamed with iterparse and every element is dropped once read, so a run of 100,000 cases
needs memory for one case at a time plus the sort of the per-case table (done in bounded chunks that are
merged from disk). Each case is reduced to a record: its id, outcome, the first line of its message, the
group it counts under and its time. Failures group by exception type (or by timeout), skips by their
reason with the variable parts (numbers, paths, addresses) collapsed, so that alike cases count together.
Messages, skip reasons, exception types and suite names are masked (kb.secrets.redact) as they are read, before
anything cuts or collapses them: a cut secret no longer looks like one. Case ids are masked where they
leave for the entry: in the groups' examples here, and in cases.tsv as kb attaches it (in blocks, which
costs a third of masking 100,000 ids one by one).

The records are sorted by case id; a case reported twice (pytest writes a second testcase when a test
fails and its fixture teardown then errors) is one case, with the first of failed, error, skipped,
passed it had. Totals, groups and cases.tsv are all made in the one pass over the sorted records.
"""

from __future__ import annotations

import heapq
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from xml.parsers.expat import errors as expat_errors

from ingest.importers.imported import Imported
from ingest.importers.regular import refuse_irregular
from kb.errors import KbError
from kb.secrets.redact import redact_text

OUTCOME_OF_TAG = {"failure": "failed", "error": "error", "skipped": "skipped"}
PRECEDENCE = ("failed", "error", "skipped", "passed")  # a case reported twice keeps the first of these
REASON_MAX = 200
GROUPS_SHOWN = 20
GROUPS_KEPT = 1_000  # distinct reasons counted one by one; later new ones count as OTHER_REASONS
OTHER_REASONS = "other reasons"
SUMMARY_GROUPS = 3
SORT_CHUNK = 50_000  # records sorted in memory at a time; more are sorted in chunks and merged from disk
CASES_NAME = "cases.tsv"
SUITES_NAMED = 3
FIRST_LINE_READ = 65_536  # of a message or traceback, for a reason of REASON_MAX: masked, the rest not read
TRACEBACK_READ = 1 << 20  # the end of a traceback, where the exception raised is named
READ_CHUNK = 65_536  # bytes fed to the parser at first; doubled while they end inside one element
READ_CHUNK_MAX = 1 << 26
# expat's errors for input that stops early: nothing at all, a tag cut off, a character cut off.
TRUNCATED = {
    expat_errors.codes[expat_errors.XML_ERROR_NO_ELEMENTS],
    expat_errors.codes[expat_errors.XML_ERROR_UNCLOSED_TOKEN],
    expat_errors.codes[expat_errors.XML_ERROR_PARTIAL_CHAR],
}

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")  # tabs and newlines would break the table's lines
_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_CLASS_IN_MESSAGE = re.compile(rf"({_DOTTED}):(?:\s|$)")  # "torch._dynamo.exc.BackendCompilerFailed: ..."
_CLASS_ON_E_LINE = re.compile(rf"^E\s+({_DOTTED})(?::|$)", re.M)  # pytest's "E   OSError: ..." lines
_CLASS_ON_LAST_LINE = re.compile(rf"^\S+:\d+: ({_DOTTED})$")  # pytest's last traceback line "t.py:9: OSError"
_PHASE = re.compile(r'failed on (\w+) with "(.*)"\Z', re.S)  # pytest's message for a fixture that broke
_TIMEOUT = re.compile(r"^(?:Failed:\s*)?Timeout\b|\btimed out\b", re.I)  # pytest-timeout, and plain words
# A timeout counts against compilation when the case, the message or the traceback is about compiling.
_COMPILING = re.compile(r"compil|_dynamo|_inductor", re.I)
# pytest's "Skipped: reason", a terminal summary's "[3] ", and "<file>:<line>: " before the reason.
_SKIP_PREFIX = re.compile(r"^(?:skipped\b:?\s*|\[\d+\]\s+|(?:[A-Za-z]:)?[^\s:]+:\d+:\s+)+", re.I)
_VARIABLE = (
    (re.compile(r"(?<![\w/\\])(?:[A-Za-z]:\\|~?/)[^\s'\"(),;]+"), "PATH"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "ADDR"),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w.]*\w)"), "N"),  # 8 and 1.5, not float16 nor 2.9.0
)


def read_junit(paths: list[Path], workdir: Path) -> Imported:
    """One test run's results (several files are parts of it) as a coverage entry with cases.tsv attached."""
    for path in paths:
        _check_readable(path)
    records = SortedRecords(workdir)
    suites: dict[str, None] = {}  # outer suite names, in order, each once
    for path in paths:
        _read_file(path, records, suites)
    tally = Tally()
    cases = workdir / CASES_NAME
    with cases.open("w", encoding="utf-8") as out:
        out.write("case\toutcome\treason\n")
        for case in _merged(records.sorted()):
            tally.add(case)
            out.write(f"{case.id}\t{case.outcome}\t{case.reason}\n")
    if tally.total == 0:
        raise KbError(f"no test cases in {', '.join(map(str, paths))}; did the test run collect anything?")
    suite = _suite_name(list(suites) or [path.stem for path in paths])
    fields = {"coverage": tally.coverage(suite), "metrics": tally.metrics()}
    return Imported(
        title=f"Test coverage: {suite}: {tally.passed_of_total()}",
        kind="coverage",
        fields=fields,
        body=_body(tally),
        files=[(cases, CASES_NAME), *((path, path.name) for path in paths)],
    )


class Case(NamedTuple):
    id: str
    outcome: str
    reason: str  # the message's first line, as cases.tsv shows it
    group: str  # the reason it counts under: an exception type, a timeout, a skip reason without its variables
    seconds: float

    def record(self) -> str:
        return f"{self.id}\t{self.outcome}\t{self.reason}\t{self.group}\t{self.seconds!r}\n"

    @classmethod
    def from_record(cls, line: str) -> Case:
        case_id, outcome, reason, group, seconds = line.rstrip("\n").split("\t")
        return cls(case_id, outcome, reason, group, float(seconds))


class SortedRecords:
    """Case records sorted by case id, holding at most SORT_CHUNK of them in memory."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.pending: list[str] = []
        self.chunks: list[Path] = []

    def add(self, case: Case) -> None:
        self.pending.append(case.record())
        if len(self.pending) >= SORT_CHUNK:
            chunk = self.workdir / f"cases-{len(self.chunks)}.part"
            chunk.write_text("".join(sorted(self.pending)), encoding="utf-8")
            self.chunks.append(chunk)
            self.pending = []

    def sorted(self) -> Iterator[str]:
        self.pending.sort()
        with ExitStack() as stack:
            chunks = [stack.enter_context(chunk.open(encoding="utf-8")) for chunk in self.chunks]
            yield from heapq.merge(self.pending, *chunks)


@dataclass
class Tally:
    """Totals, time and groups of the cases, counted as they pass by."""

    outcomes: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    groups: dict[tuple[str, str], list[Any]] = field(default_factory=dict)  # (outcome, reason): [count, example]

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    def add(self, case: Case) -> None:
        self.outcomes[case.outcome] += 1
        self.seconds += case.seconds
        if case.outcome == "passed":
            return
        key = (case.outcome, case.group)
        if key not in self.groups and len(self.groups) >= GROUPS_KEPT:
            key = (case.outcome, OTHER_REASONS)
        # Cases arrive sorted, so the first one seen is the group's example in every order of the files.
        self.groups.setdefault(key, [0, case.id])[0] += 1

    def ranked_groups(self) -> list[dict[str, Any]]:
        ranked = sorted(self.groups.items(), key=lambda item: (-item[1][0], item[0]))
        return [
            {"outcome": outcome, "reason": reason, "count": count, "example": redact_text(example)}
            for (outcome, reason), (count, example) in ranked
        ]

    def passed_of_total(self) -> str:
        return f"{self.outcomes['passed']} of {self.total} passed"

    def coverage(self, suite: str) -> dict[str, Any]:
        return {
            "suite": suite,
            "total": self.total,
            "passed": self.outcomes["passed"],
            "failed": self.outcomes["failed"],
            "errors": self.outcomes["error"],
            "skipped": self.outcomes["skipped"],
            "time_s": round(self.seconds, 1),
            "groups": self.ranked_groups()[:GROUPS_SHOWN],
            "cases": CASES_NAME,
        }

    def metrics(self) -> dict[str, dict[str, Any]]:
        return {
            "passed": {"value": self.outcomes["passed"], "unit": "cases", "better": "higher"},
            "failed": {"value": self.outcomes["failed"], "unit": "cases", "better": "lower"},
            "skipped": {"value": self.outcomes["skipped"], "unit": "cases"},
            "pass_rate": {
                "value": round(100 * self.outcomes["passed"] / self.total, 1),
                "unit": "%",
                "better": "higher",
            },
        }


def _check_readable(path: Path) -> None:
    refuse_irregular(path, "a JUnit XML file, e.g. from pytest --junitxml")
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise KbError(
            f"cannot read {path}: {exc.strerror}; expected a JUnit XML file, e.g. from pytest --junitxml"
        ) from None


def _read_file(path: Path, records: SortedRecords, suites: dict[str, None]) -> None:
    """Stream one file's cases into `records`; every element is removed from its parent once read."""
    open_elements: list[ET.Element] = []
    try:
        with path.open("rb") as handle:
            for event, element in _events(handle):
                if event == "start":
                    _note_start(path, element, open_elements, suites)
                    open_elements.append(element)
                    continue
                tag = _local(element.tag)
                open_elements.pop()
                parent = open_elements[-1] if open_elements else None
                if tag == "testcase":
                    records.add(_case(path, element))
                elif tag in OUTCOME_OF_TAG and parent is not None and _local(parent.tag) == "testcase":
                    continue  # read with its testcase
                if parent is not None:
                    parent.remove(element)
    except ET.ParseError as exc:
        raise KbError(_parse_error(path, exc)) from None
    except (LookupError, ValueError) as exc:  # an encoding expat cannot read: unknown, or of several bytes
        raise KbError(f"{path}: the XML declaration names an encoding kb cannot read ({exc}); save as UTF-8") from None
    except OSError as exc:
        raise KbError(f"cannot read {path}: {exc.strerror}") from None


def _note_start(path: Path, element: ET.Element, open_elements: list[ET.Element], suites: dict[str, None]) -> None:
    """Check the root; note the name of each outermost suite (nested ones are parts of it)."""
    tag = _local(element.tag)
    if not open_elements and tag not in ("testsuites", "testsuite"):
        raise KbError(f"{path}: not JUnit XML: the root element is <{tag}>; expected <testsuites> or <testsuite>")
    name = element.get("name")
    if tag == "testsuite" and name and not any(_local(e.tag) == "testsuite" for e in open_elements):
        suites.setdefault(redact_text(name), None)


def _parse_error(path: Path, exc: ET.ParseError) -> str:
    line, column = exc.position
    what = re.sub(r": line \d+, column \d+\Z", "", str(exc))
    what = re.sub(r"\Anot well-formed \((.*)\)\Z", r"\1", what)
    hint = "is the file complete?" if exc.code in TRUNCATED else "expected JUnit XML, e.g. from pytest --junitxml"
    return f"{path}:{line}:{column + 1}: not well-formed XML ({what}); {hint}"  # expat counts columns from 0


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]  # without an XML namespace


def _case(path: Path, element: ET.Element) -> Case:
    owner = element.get("classname") or element.get("file") or ""
    name = element.get("name") or ""
    case_id = _clean(f"{owner}::{name}" if owner else name)
    seconds = _seconds(path, case_id, element.get("time"))
    for child in element:
        outcome = OUTCOME_OF_TAG.get(_local(child.tag))
        if outcome == "skipped":
            reason = _skip_reason(child)
            return Case(case_id, outcome, reason, _collapse(reason), seconds)
        if outcome:
            # Masked once, and only the head the reason and group are taken from: not megabytes for 200 characters.
            message = redact_text((child.get("message") or "")[:FIRST_LINE_READ])
            reason = _first_line(message) if message else _masked_first_line(child.get("type") or child.text)
            return Case(case_id, outcome, _clean(reason)[:REASON_MAX], _failure_group(case_id, child, message), seconds)
    return Case(case_id, "passed", "", "", seconds)


def _seconds(path: Path, case_id: str, value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return float(value.replace(",", ""))  # some producers write thousands separators: 1,234.5
    except ValueError:
        shown = case_id if len(case_id) <= REASON_MAX else case_id[: REASON_MAX - 1] + "…"
        raise KbError(f"{path}: case {shown}: time={value[:40]!r} is not a number of seconds") from None


def _skip_reason(skipped: ET.Element) -> str:
    reason = _SKIP_PREFIX.sub("", _masked_first_line(skipped.get("message") or skipped.text))
    if skipped.get("type") == "pytest.xfail":
        reason = f"expected failure: {reason}" if reason else "expected failure"
    return _clean(reason)[:REASON_MAX]


def _failure_group(case_id: str, child: ET.Element, message: str) -> str:
    """What a failure or error counts under: a timeout, else its exception type, else its (masked) message. The
    traceback's tail says it: one of megabytes is not searched whole, once per rule."""
    text = (child.text or "")[-TRACEBACK_READ:]
    phase, cause = _phase_and_cause(message)
    if _TIMEOUT.search(cause):
        compiling = any(_COMPILING.search(part) for part in (case_id, message, text))
        group = "exceeded the compile time limit" if compiling else "exceeded the time limit"
    else:
        exception = _exception_type(child.get("type"), cause, text)
        if exception and exception != "Failed":
            group = redact_text(exception)  # a token passes for a class name: `ghp_...: bad credentials`
        else:  # no type, or pytest.fail("why"): the message says why
            group = _collapse(re.sub(r"\AFailed:\s*", "", _first_line(cause))) or "no message"
    return f"{group} in {phase}" if phase else group


def _phase_and_cause(message: str) -> tuple[str | None, str]:
    """pytest's messages for what broke outside the test itself: a fixture, or importing the test module."""
    if message == "collection failure":
        return "collection", ""  # the exception is named only in the traceback
    found = _PHASE.match(message)
    return (found[1], found[2]) if found else (None, message)


def _exception_type(declared: str | None, message: str, text: str) -> str | None:
    """The exception's class, as the producer declared it or as pytest's message and traceback name it."""
    if declared and re.fullmatch(_DOTTED, declared):
        return declared
    found = _CLASS_IN_MESSAGE.match(message)
    if found:
        return found[1]
    on_e_lines = _CLASS_ON_E_LINE.findall(text)
    if on_e_lines:
        return on_e_lines[-1]  # the last is the exception raised, after any it was chained from
    found = _CLASS_ON_LAST_LINE.match(text.rstrip().rpartition("\n")[2])
    return found[1] if found else None


def _collapse(reason: str) -> str:
    """The reason with what varies from case to case (numbers, paths, addresses) replaced by placeholders."""
    for pattern, placeholder in _VARIABLE:
        reason = pattern.sub(placeholder, reason)
    return _clean(reason)[:REASON_MAX]


def _masked_first_line(text: str | None) -> str:
    """The first line with secrets masked; a line starting a private key block is masked whole."""
    return redact_text(_first_line(text or ""))


def _first_line(text: str) -> str:
    lines = text.lstrip()[:FIRST_LINE_READ].splitlines()
    return lines[0].strip() if lines else ""


def _events(handle: Any) -> Iterator[tuple[str, ET.Element]]:
    """iterparse's events, fed in chunks that double while no element ends in them: expat (before 2.6) parses an
    unfinished element again with every chunk, which made a message of 60 MB take minutes in 16 KB chunks."""
    parser = ET.XMLPullParser(events=("start", "end"))
    size = READ_CHUNK
    while chunk := handle.read(size):
        parser.feed(chunk)
        found = False
        for found_event in parser.read_events():
            found = True
            yield found_event
        size = size if found else min(size * 2, READ_CHUNK_MAX)
    parser.close()
    yield from parser.read_events()


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text).strip()


def _merged(records: Iterator[str]) -> Iterator[Case]:
    """Cases from sorted records, one per id: a case reported twice keeps its weightiest outcome."""
    current: Case | None = None
    for line in records:
        case = Case.from_record(line)
        if current is None or case.id != current.id:
            if current is not None:
                yield current
            current = case
        else:
            kept = case if PRECEDENCE.index(case.outcome) < PRECEDENCE.index(current.outcome) else current
            current = kept._replace(seconds=current.seconds + case.seconds)
    if current is not None:
        yield current


def _suite_name(names: list[str]) -> str:
    shown = ", ".join(names[:SUITES_NAMED])
    return f"{shown} and {len(names) - SUITES_NAMED} more" if len(names) > SUITES_NAMED else shown


def _body(tally: Tally) -> str:
    groups = tally.ranked_groups()
    lines = [_summary(tally, groups), ""]
    if groups:
        lines += ["| outcome | reason | count | example |", "|---|---|---:|---|"]
        lines += [
            f"| {g['outcome']} | {_cell(g['reason'])} | {g['count']} | {_code(g['example'])} |"
            for g in groups[:GROUPS_SHOWN]
        ]
        lines.append("")
        hidden = groups[GROUPS_SHOWN:]
        if hidden:
            lines += [f"{sum(g['count'] for g in hidden)} more cases in {len(hidden)} smaller groups.", ""]
    lines.append(f"Every case's outcome and reason: {CASES_NAME} (attached).")
    return "\n".join(lines) + "\n"


def _summary(tally: Tally, groups: list[dict[str, Any]]) -> str:
    """'89 of 96 passed; 7 exceeded the compile time limit; 3 skipped (dynamic shapes not supported).'"""
    named = groups[:SUMMARY_GROUPS]
    parts = [tally.passed_of_total(), *map(_phrase, named)]
    rest = tally.total - tally.outcomes["passed"] - sum(g["count"] for g in named)
    if rest:
        parts.append(f"{rest} more in other groups")
    return "; ".join(parts) + "."


def _phrase(group: dict[str, Any]) -> str:
    count, outcome, reason = group["count"], group["outcome"], group["reason"]
    if reason.startswith("exceeded the "):
        return f"{count} {reason}"
    word = {"failed": "failed", "error": "error" if count == 1 else "errors", "skipped": "skipped"}[outcome]
    return f"{count} {word} ({reason})"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"
