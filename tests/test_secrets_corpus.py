"""The whole secrets corpus, planted everywhere evidence comes from, never reaches a stored byte.

One knowledge base (built once for the module, through the real CLI) receives every credential shape in
tests/data/secrets_corpus.py and every harmless look-alike: as environment variables and arguments of a
recorded command, in its stdout and stderr, in notes, in `--backend`, `--mode`, `--tag` and metric units,
in the run folder (note and set events, a file the command writes there), in a run folder imported with
`--from` (its run.json's command, environment, settings and failure), in attached logs in UTF-8, Latin-1,
UTF-16 and with a NUL, in `kb add`, `kb decide` and `kb release` text (a release URL with a password), and
inside imported JUnit XML, a profiler trace and a TORCH_TRACE folder. Then the index and the site are built
and every file under the knowledge base (entries, attachments, the index, the site with its Pagefind index)
is read as bytes, gzip opened, UTF-16 decoded, URL-encoded text decoded and base64 runs decoded: no secret
appears, not even a piece from its middle, and every look-alike is still in the entry it was planted in.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote_to_bytes
from xml.sax.saxutils import escape, quoteattr

import pytest
from conftest import run_kb
from data.secrets_corpus import LOOK_ALIKES, SECRETS, LookAlike, Secret

from kb.model.entry import Entry
from kb.secrets.redact import MASK, redact_text
from kb.store.knowledge_base import KnowledgeBase

TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+/-]{0,63}")
BASE64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{16,}={0,2}")
RUN_FOLDER_WRITER = """\
import json, os, sys
lines = open(sys.argv[1]).read().split("\\n\\n")
run = os.environ["KB_RUN_DIR"]
with open(os.path.join(run, "events.jsonl"), "a") as events:
    for number, line in enumerate(lines):
        events.write(json.dumps({"event": "note", "text": line}) + "\\n")
        events.write(json.dumps({"event": "set", "field": f"settings.s{number}", "value": line}) + "\\n")
open(os.path.join(run, "written.txt"), "w").write("\\n".join(lines))
"""
PREFIX = "V1130 06:46:39.676000 23211 torch/_dynamo/convert_frame.py:1000] "
# Prints the planted lines it is given as a file: odd ones to stdout, even ones to stderr.
PRINTER = """\
import sys
lines = open(sys.argv[1]).read().split("\\n\\n")
for number, line in enumerate(lines):
    print(line, file=sys.stderr if number % 2 else sys.stdout, flush=True)
"""


def planted(secrets: list[Secret] = SECRETS, look_alikes: list[LookAlike] = LOOK_ALIKES) -> list[str]:
    """Every secret's line with a look-alike after it, so that masking one cannot eat the next."""
    texts = [s.text for s in secrets]
    alikes = [a.text for a in look_alikes]
    return [text for pair in zip(texts, alikes + [""] * len(texts), strict=False) for text in pair if text] + alikes[
        len(texts) :
    ]


@dataclass
class Planted:
    root: Path
    entries: dict[str, Entry]  # channel -> the entry it made

    @cached_property
    def scanned(self) -> dict[str, tuple[bytes, bytes]]:
        """Every file kb wrote (relative path -> its bytes in every form, and those in lower case)."""
        out = {}
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            data = every_form(readable(path))
            out[str(path.relative_to(self.root))] = (data, data.lower())
        return out

    def entry_text(self, channel: str) -> str:
        """The entry file and its attachments, as text (gzipped attachments opened, UTF-16 decoded)."""
        entry = self.entries[channel]
        assert entry.path is not None
        files = [entry.path, *sorted(p for p in entry.path.with_suffix("").rglob("*") if p.is_file())]
        return "\n".join(as_text(readable(p)) for p in files)


def readable(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def as_text(data: bytes) -> str:
    return data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode("utf-8", "replace")


def every_form(data: bytes) -> bytes:
    """The bytes, with what they hold in other forms beside them: UTF-16 text, URL-encoded text, base64 runs."""
    forms = [data, as_text(data).encode("utf-8", "replace"), unquote_to_bytes(data)]
    for run in BASE64_RUN.findall(data):
        for alphabet in (None, b"-_"):
            with contextlib.suppress(binascii.Error, ValueError):
                forms.append(base64.b64decode(run + b"=" * (-len(run) % 4), altchars=alphabet))
    return b"\n".join(forms)


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
    password = next(s for s in SECRETS if s.id == "https-url-password").value
    return plant(tmp_path_factory.mktemp("corpus"), SECRETS, LOOK_ALIKES, password)


def plant(top: Path, secrets: list[Secret], look_alikes: list[LookAlike], password: str) -> Planted:
    """Every secret and look-alike of a corpus planted in every channel of a new knowledge base under `top`."""
    kb, _ = KnowledgeBase.init(top / "knowledge-base")
    names = sorted({s.variable for s in secrets} | {a.variable for a in look_alikes})
    kb.config_path.write_text(kb.config_path.read_text().replace("env_prefixes = []", f"env_prefixes = {names}"))
    lines = planted(secrets, look_alikes)
    work = top / "work"
    work.mkdir()
    (work / "planted.txt").write_text("\n\n".join(lines))
    env = {s.variable: s.env_value for s in secrets} | {a.variable: a.text for a in look_alikes}
    note = "\n\n".join(lines)

    flags = [part for s in secrets for part in (f"--{s.variable.lower().replace('_', '-')}", s.env_value)]
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

    one_line = [text for text in lines if "\n" not in text]
    # A tag holds a bare value: only what is recognisable without the words around it can be planted there.
    tags = [
        part for s in secrets if TAG.fullmatch(s.value) and MASK in redact_text(s.value) for part in ("--tag", s.value)
    ]
    units = [part for number, text in enumerate(one_line) for part in ("--metric", f"m{number}=1 {text}")]
    kb_ok(kb.root, "record", "--title", "corpus: options", "--no-edit", "--status", "completed", "--backend",
          " | ".join(one_line), "--mode", " | ".join(one_line), *tags, *units)  # fmt: skip
    kb_ok(kb.root, "record", "--title", "corpus: run folder", "--", sys.executable, "-c", RUN_FOLDER_WRITER,
          str(work / "planted.txt"))  # fmt: skip
    imported = work / "node7"
    imported.mkdir()
    manifest = {"command": {"argv": [*lines, *flags], "line": "python train.py", "cwd": "/srv"},
                "environment": env, "settings": {f"s{n}": line for n, line in enumerate(lines)}
                | {s.variable.lower(): s.env_value for s in secrets},
                "failure": {"class": "crash", "message": note}, "status": "failed"}  # fmt: skip
    (imported / "run.json").write_text(json.dumps(manifest))
    (imported / "events.jsonl").write_text("".join(json.dumps({"event": "note", "text": t}) + "\n" for t in lines))
    (imported / "extra.log").write_text(note)
    kb_ok(kb.root, "record", "--title", "corpus: from", "--from", str(imported), "--no-edit")
    text = "\n".join(lines) + "\ncontraseña über die Grenze\n"
    (work / "latin1.log").write_bytes(text.encode("latin-1", "replace"))
    (work / "utf16.txt").write_bytes(text.encode("utf-16"))
    (work / "nul.log").write_bytes(text[: len(text) // 2].encode() + b"\x00" + text[len(text) // 2 :].encode())
    kb_ok(kb.root, "record", "--title", "corpus: encodings", "--no-edit", "--status", "failed", "--log",
          str(work / "latin1.log"), "--attach", str(work / "utf16.txt"), "--attach", str(work / "nul.log"))  # fmt: skip
    kb_ok(kb.root, "decide", "--title", "corpus: decide", "--question", note, "--choice", note, "--rationale", note,
          "--owner", " | ".join(one_line), *[part for line in lines for part in ("--alternative", line)])  # fmt: skip
    release = kb_ok(kb.root, "release", "torch-neuronx", "2.27.1", "--url",
                    f"https://ci:{password}@releases.example.com/notes", "--notes", note)  # fmt: skip
    kb_ok(kb.root, "index")
    kb_ok(kb.root, "search", "tokens_per_s")
    kb_ok(kb.root, "site", "build")
    problems: list = []
    entries = {e.title.removeprefix("corpus: "): e for e in kb.iter_entries(problems)}
    assert problems == []
    releases = [title for title, e in entries.items() if e.kind == "release"]
    assert len(releases) == 1 and release.strip()
    entries["release"] = entries.pop(releases[0])
    assert sorted(entries) == sorted(CHANNELS)
    return Planted(kb.root, entries)


CHANNELS = ["add", "compile-trace", "decide", "encodings", "from", "junit", "log", "options", "profile", "record",
            "release", "run folder"]  # fmt: skip


def test_the_corpus_is_large_and_its_probes_are_distinct() -> None:
    assert len(SECRETS) >= 100 and len(LOOK_ALIKES) >= 100
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
    assert (stored.root / ".kb" / "index.db").is_file()
    options = stored.entries["options"].data
    assert options["backend"].count(MASK) > 50 and MASK in options["mode"] and "redacted" in options["tags"]
    assert sum(MASK in metric.get("unit", "") for metric in options["metrics"].values()) > 50
    folder = stored.entries["run folder"]
    assert folder.data["settings"]["s0"] == MASK or MASK in folder.data["settings"]["s0"]
    assert MASK in (stored.root / "entries" / folder.path.stem / "run" / "events.jsonl").read_text()
    imported = stored.entries["from"].data
    assert MASK in imported["command"]["line"] and MASK in imported["failure"]["message"]
    assert [s.id for s in SECRETS if MASK not in imported["settings"][s.variable.lower()]] == []
    release = stored.entries["release"].data["release"]
    assert release["url"] == f"https://ci:{MASK}@releases.example.com/notes" and MASK in release["notes"]


@pytest.mark.parametrize("secret", SECRETS, ids=[s.id for s in SECRETS])
def test_no_part_of_a_secret_is_stored_anywhere(stored: Planted, secret: Secret) -> None:
    probe = secret.probe.lower().encode()
    whole = secret.value.encode()
    # lower: the full-text index stores its terms in lower case
    leaks = [path for path, (data, lower) in stored.scanned.items() if probe in lower or whole in data]
    assert leaks == []


@pytest.mark.parametrize("alike", LOOK_ALIKES, ids=[a.id for a in LOOK_ALIKES])
def test_a_look_alike_survives_where_it_was_planted(stored: Planted, alike: LookAlike) -> None:
    record = stored.entries["record"]
    assert record.data["environment"][alike.variable] == alike.text
    assert alike.text in record.data["command"]["argv"]
    assert alike.text in record.body  # the note
    # as is, in XML, in JSON, in YAML's single quotes
    shown = (alike.text, escape(alike.text), json.dumps(alike.text)[1:-1], alike.text.replace("'", "''"))
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
