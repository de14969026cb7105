"""The whole secrets corpus, planted everywhere evidence comes from, never reaches a stored byte.

One knowledge base (built once for the module, through the real CLI) receives every credential shape in
tests/data/secrets_corpus.py and every harmless look-alike: as environment variables and arguments of a
recorded command, in its stdout and stderr, in notes, in an attached log, in `kb add` text, and inside
imported JUnit XML, a profiler trace and a TORCH_TRACE folder. Then the indexes and the site are built and
every file under the knowledge base (entries, attachments, the SQLite and Whoosh indexes, the site with its
Pagefind index) is read as bytes, gzip opened: no secret appears, not even a piece from its middle, and
every look-alike is still in the entry it was planted in.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import pytest
from conftest import run_kb
from data.secrets_corpus import LOOK_ALIKES, SECRETS, LookAlike, Secret

from kb.entry import Entry
from kb.redact import MASK
from kb.store import KnowledgeBase

PREFIX = "V1130 06:46:39.676000 23211 torch/_dynamo/convert_frame.py:1000] "
# Prints the planted lines it is given as a file: odd ones to stdout, even ones to stderr.
PRINTER = """\
import sys
lines = open(sys.argv[1]).read().split("\\n\\n")
for number, line in enumerate(lines):
    print(line, file=sys.stderr if number % 2 else sys.stdout, flush=True)
"""


def planted() -> list[str]:
    """Every secret's line with a look-alike after it, so that masking one cannot eat the next."""
    texts = [s.text for s in SECRETS]
    alikes = [a.text for a in LOOK_ALIKES]
    return [text for pair in zip(texts, alikes + [""] * len(texts), strict=False) for text in pair if text] + alikes[
        len(texts) :
    ]


@dataclass
class Planted:
    root: Path
    entries: dict[str, Entry]  # channel -> the entry it made

    def entry_text(self, channel: str) -> str:
        """The entry file and its attachments, as text (gzipped attachments opened)."""
        entry = self.entries[channel]
        assert entry.path is not None
        files = [entry.path, *sorted(p for p in entry.path.with_suffix("").rglob("*") if p.is_file())]
        return "\n".join(readable(p).decode("utf-8", "replace") for p in files)


def readable(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def kb_ok(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = run_kb("--kb", str(root), *args, env=env, cwd=root.parent)
    assert result.returncode == 0, result.stderr
    return result.stdout


def junit_xml(lines: list[str], outcome: str = "failure") -> str:
    """Each line as a failed (or skipped) case's message and in its name; all of them as the suite's output."""
    cases = []
    for number, text in enumerate(lines):
        first = text.split("\n", 1)[0]
        body = f"<failure message={quoteattr(first)} type='RuntimeError'>{escape(text)}</failure>"
        if outcome == "skipped":
            body = f"<skipped message={quoteattr(first)}/>"
        name = quoteattr(f"test_{number}[{first}]")  # a parametrised test's id holds its parameters
        cases.append(f"<testcase classname='corpus' name={name} time='0.5'>{body}</testcase>")
    out = escape("\n".join(lines))
    return f"<testsuite name='corpus' tests='{len(lines)}'>{''.join(cases)}<system-out>{out}</system-out></testsuite>"


def profile_trace(names: list[str], notes: list[str], category: str = "cpu_op", trace_name: str = "corpus") -> str:
    """Operators named `names` (the first take longest: they lead the top operators), `notes` in their args."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10**6}
    ]
    for number, (name, note) in enumerate(zip(names, notes, strict=True)):
        event = {"ph": "X", "cat": category, "name": name.split("\n", 1)[0], "pid": 1, "tid": 1, "ts": number * 1000}
        events.append({**event, "dur": 900 - number, "args": {"note": note}})
    return json.dumps({"schemaVersion": 1, "traceName": trace_name, "traceEvents": events}, indent=1)


def compile_log(lines: list[str]) -> str:
    records = []
    for frame, text in enumerate(lines):
        ids = {"frame_id": frame, "frame_compile_id": 0, "attempt": 0}
        first = text.split("\n", 1)[0]
        records.append({"dynamo_start": {"stack": [{"line": 1, "name": f"fn_{frame}", "filename": 0}]}, **ids})
        payload = f"Graph Break Reason: {first}\nExplanation: {text}".replace("\n", "\n\t")
        records.append(({"artifact": {"name": "dynamo_graph_break_reason", "encoding": "string"}, **ids,
                         "has_payload": "0"}, payload))  # fmt: skip
        metrics = {"co_name": f"fn_{frame}", "duration_us": 1000, "fail_type": "RuntimeError", "fail_reason": text,
                   "recompile_reason": first}  # fmt: skip
        records.append({"compilation_metrics": metrics, **ids})
    out = []
    for record in records:
        data, payload = record if isinstance(record, tuple) else (record, None)
        out.append(PREFIX + json.dumps(data))
        if payload is not None:
            out.append("\t" + payload)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    top = tmp_path_factory.mktemp("corpus")
    kb, _ = KnowledgeBase.init(top / "knowledge-base")
    names = sorted({s.variable for s in SECRETS} | {a.variable for a in LOOK_ALIKES})
    kb.config_path.write_text(kb.config_path.read_text().replace("env_prefixes = []", f"env_prefixes = {names}"))
    lines = planted()
    work = top / "work"
    work.mkdir()
    (work / "planted.txt").write_text("\n\n".join(lines))
    env = {s.variable: s.env_value for s in SECRETS} | {a.variable: a.text for a in LOOK_ALIKES}
    note = "\n\n".join(lines)

    flags = [part for s in SECRETS for part in (f"--{s.variable.lower().replace('_', '-')}", s.env_value)]
    kb_ok(kb.root, "record", "--title", "corpus: record", "--note", note, "--", sys.executable, "-c", PRINTER,
          str(work / "planted.txt"), *lines, *flags, env=env)  # fmt: skip
    log = work / "remote.log"
    log.write_text("\n".join(lines) + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    kb_ok(kb.root, "record", "--title", "corpus: log", "--log", str(log), "--status", "failed", "--no-edit")
    caveats = [part for line in lines for part in ("--caveat", line)]
    kb_ok(kb.root, "add", "--title", "corpus: add", "--publisher", "Bench Weekly", "--url", "https://example.com/r",
          "--date", "2026-01-02", "--measured", note, "--metric", "tokens_per_s=10", "--note", note, *caveats,
          "--reported-by", "jane")  # fmt: skip
    (work / "results.xml").write_text(junit_xml(lines))
    kb_ok(kb.root, "ingest", "junit", str(work / "results.xml"), "--title", "corpus: junit", "--note", note)
    (work / "trace.json").write_text(profile_trace(lines, lines))
    kb_ok(kb.root, "ingest", "profile", str(work / "trace.json"), "--title", "corpus: profile", "--note", note)
    (work / "torch_trace").mkdir()
    (work / "torch_trace" / "dedicated_log_torch_trace_rank_0_corpus.log").write_text(compile_log(lines))
    kb_ok(kb.root, "ingest", "compile-trace", str(work / "torch_trace"), "--title", "corpus: compile-trace")

    kb_ok(kb.root, "index")
    kb_ok(kb.root, "search", "tokens_per_s")
    kb_ok(kb.root, "site", "build")
    problems: list = []
    entries = {e.title.removeprefix("corpus: "): e for e in kb.iter_entries(problems)}
    assert problems == []
    assert sorted(entries) == ["add", "compile-trace", "junit", "log", "profile", "record"]
    return Planted(kb.root, entries)


def test_the_corpus_is_large_and_its_probes_are_distinct() -> None:
    assert len(SECRETS) >= 30 and len(LOOK_ALIKES) >= 30
    assert len({s.id for s in SECRETS}) == len(SECRETS) and len({a.id for a in LOOK_ALIKES}) == len(LOOK_ALIKES)
    harmless = "\n".join([a.text for a in LOOK_ALIKES] + [s.line + s.env for s in SECRETS]).lower()
    for secret in SECRETS:
        assert len(secret.probe) == 10 and secret.probe in secret.value
        assert secret.probe.lower() not in harmless, secret.id  # a probe found means that secret, nothing else


def test_every_place_was_reached(stored: Planted) -> None:
    """The planting worked: each secret was seen (and masked) where it was put, so the scan below means something."""
    record = stored.entries["record"].data
    assert {s.variable: record["environment"][s.variable] for s in SECRETS if MASK in record["environment"][s.variable]}
    assert MASK in " ".join(record["command"]["argv"])
    assert MASK in stored.entries["record"].body
    for channel in stored.entries:
        assert MASK in stored.entry_text(channel), channel
    site = stored.root / "site"
    assert (site / "index.html").is_file() and list((site / "pagefind").rglob("*.pf_fragment"))
    assert list((stored.root / ".kb").rglob("*.seg")) or list((stored.root / ".kb").rglob("*.trm"))


@pytest.mark.parametrize("secret", SECRETS, ids=[s.id for s in SECRETS])
def test_no_part_of_a_secret_is_stored_anywhere(stored: Planted, secret: Secret) -> None:
    probe = secret.probe.lower().encode()
    whole = secret.value.encode()
    leaks = []
    for path in sorted(p for p in stored.root.rglob("*") if p.is_file()):
        data = readable(path)
        if probe in data.lower() or whole in data:  # lower: Whoosh stores its terms in lower case
            leaks.append(str(path.relative_to(stored.root)))
    assert leaks == []


@pytest.mark.parametrize("alike", LOOK_ALIKES, ids=[a.id for a in LOOK_ALIKES])
def test_a_look_alike_survives_where_it_was_planted(stored: Planted, alike: LookAlike) -> None:
    record = stored.entries["record"]
    assert record.data["environment"][alike.variable] == alike.text
    assert alike.text in record.data["command"]["argv"]
    assert alike.text in record.body  # the note
    shown = (alike.text, escape(alike.text), json.dumps(alike.text)[1:-1])  # as is, in XML, in JSON
    missing = [channel for channel in stored.entries if not any(t in stored.entry_text(channel) for t in shown)]
    assert missing == []


# -- every other place a person or a file can put text, one at a time -------------------------------------

ONE_LINE = " | ".join(s.text for s in SECRETS if "\n" not in s.text)  # for options that take one line
ALL_LINES = "\n".join(s.text for s in SECRETS)
REPORT = ("add", "--publisher", "p", "--url", "https://example.com/r", "--date", "2026-01-02", "--metric", "a=1",
          "--reported-by", "jane")  # fmt: skip
REPORT_TEXT = [part for option in ("--publisher", "--workload", "--model", "--hardware", "--reported-by")
               for part in (option, ONE_LINE)]  # fmt: skip
RECORD = ("record", "--no-edit", "--status", "failed")
PLACES = {
    "record --title": (*RECORD, "--title", ONE_LINE),
    "record --workload": (*RECORD, "--workload", ONE_LINE),
    "record --author": (*RECORD, "--title", "t", "--author", ONE_LINE),
    "record --explain": (*RECORD, "--title", "t", "--explain", ALL_LINES),
    "record --setting": (*RECORD, "--title", "t", "--setting", f"note={ONE_LINE}"),
    "add --title": (*REPORT, "--title", ONE_LINE, "--measured", "m"),
    "add --measured": (*REPORT, "--title", "t", "--measured", ALL_LINES),
    "add --caveat": (*REPORT, "--title", "t", "--measured", "m", "--caveat", ALL_LINES),
    "add's other text": (*REPORT, "--title", "t", "--measured", "m", *REPORT_TEXT, "--version", f"torch={ONE_LINE}"),
    "junit skip reasons": ("ingest", "junit", "{skipped.xml}"),
    "profile operator names": ("ingest", "profile", "{trace.json}"),
    "profile device operations and trace name": ("ingest", "profile", "{kernels.json}"),
    "profile gzipped trace": ("ingest", "profile", "{trace.json.gz}"),
    "profile trace over a megabyte": ("ingest", "profile", "{long.json}"),
}
SECRET_LINES = [s.text for s in SECRETS]
PADDING = 1_100  # events of a kilobyte each: a plain trace over 1 MiB is attached gzipped
# The files the places import, each with every secret where that place reads it.
FILES: dict[str, Callable[[], bytes]] = {
    "{skipped.xml}": lambda: junit_xml(SECRET_LINES, "skipped").encode(),
    "{trace.json}": lambda: profile_trace(SECRET_LINES, ["-"] * len(SECRET_LINES)).encode(),
    "{kernels.json}": lambda: profile_trace(SECRET_LINES, ["-"] * len(SECRET_LINES), "kernel", ONE_LINE).encode(),
    "{trace.json.gz}": lambda: gzip.compress(profile_trace(["aten::mm"] * len(SECRET_LINES), SECRET_LINES).encode()),
    "{long.json}": lambda: profile_trace(
        ["aten::add"] * (PADDING + len(SECRET_LINES)), ["-" * 1000] * PADDING + SECRET_LINES
    ).encode(),
}


@pytest.mark.parametrize("place", PLACES)
def test_no_secret_is_stored_from_any_other_place(kb: KnowledgeBase, tmp_path: Path, place: str) -> None:
    args = list(PLACES[place])
    for number, arg in enumerate(args):
        if arg in FILES:
            path = tmp_path / arg.strip("{}")
            path.write_bytes(FILES[arg]())
            args[number] = str(path)
    result = run_kb(*args)
    assert result.returncode == 0, result.stderr
    stored = "\n".join(readable(p).decode("utf-8", "replace") for p in kb.entries_path.rglob("*") if p.is_file())
    assert MASK in stored  # the secrets reached the entry, masked
    assert [s.id for s in SECRETS if s.probe.lower() in stored.lower()] == []
