"""Upgrades of the entry format: every schema-1 entry is read by every later kb, and `kb migrate` rewrites
entries safely when the format changes.

tests/data/schema-v1/ is a frozen corpus of entries written by kb with schema 1 (and by hand): every kind,
every status, every section. It is never edited (SHA256SUMS pins it); a kb that stops reading it fails here.
The migration machinery is proven against the next version as a future kb would make it: a step that
moves and renames a field, a schema that requires the new layout, SCHEMA_VERSION one higher.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, json_data, run_kb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.errors import EntryError
from kb.model import entry as entry_module
from kb.model import upgrade
from kb.model import validation as schema
from kb.model.entry import Entry, new_entry
from kb.model.frontmatter import Plain
from kb.store import atomic, migrate
from kb.store.knowledge_base import KnowledgeBase

CORPUS = REPO / "tests" / "data" / "schema-v1"
MANIFEST = CORPUS / "SHA256SUMS"
CORPUS_ENTRIES = sorted(CORPUS.glob("*.md"))
CURRENT = schema.SCHEMA_VERSION
NEXT = CURRENT + 1
# Scaled up outside CI: KB_MIGRATE_KILL_POINTS=all kills `kb migrate --write` after every possible number of
# files; KB_MIGRATE_FUZZ=N tries N generated entries.
KILL_POINTS = os.environ.get("KB_MIGRATE_KILL_POINTS", "")
FUZZ_EXAMPLES = int(os.environ.get("KB_MIGRATE_FUZZ", "150"))

# What schema 1 allows, frozen with the corpus: the corpus must keep covering all of it.
V1_KINDS = {"run", "coverage", "decision", "report", "note", "release"}
V1_STATUSES = {"completed", "failed", "interrupted", "killed", "running"}
V1_SECTIONS = {
    "schema", "id", "title", "kind", "status", "recorded", "author", "tags", "links", "provenance", "workload",
    "backend", "mode", "settings", "command", "recorder", "git", "versions", "hardware", "environment", "timings",
    "metrics", "failure", "adaptations", "attachments", "compile", "fallbacks", "memory", "numerics", "ranks",
    "precision", "decision", "release", "report", "coverage", "profile",
}  # fmt: skip


# --- The next version, as a future kb would define it -------------------------------------------------------


def move_recorder(data: dict[str, Any]) -> dict[str, Any]:
    """A real-shaped step: `recorder` moves into `provenance`, and its `started` is renamed `process_started`."""
    recorder = data.pop("recorder", None)
    if isinstance(recorder, dict):
        if "started" in recorder:
            recorder["process_started"] = recorder.pop("started")
        data.setdefault("provenance", {"source": Plain("measured")})["recorder"] = recorder
    return data


def next_schema(current: dict[str, Any]) -> dict[str, Any]:
    """The current JSON Schema changed as the step needs: the new version number, no top-level recorder."""
    out = json.loads(json.dumps(current))
    out["properties"]["schema"]["const"] = NEXT
    recorder = out["properties"].pop("recorder")
    recorder["properties"]["process_started"] = recorder["properties"].pop("started")
    out["properties"]["recorder"] = False
    out["properties"]["provenance"]["properties"]["recorder"] = recorder
    return out


def enter_next_version(set_attr: Callable[[Any, str, Any], None]) -> None:
    """Make this process a kb of the next version (set_attr: setattr, or monkeypatch.setattr to undo it)."""
    upcoming = next_schema(schema.entry_schema())
    set_attr(schema, "SCHEMA_VERSION", NEXT)
    set_attr(entry_module, "SCHEMA_VERSION", NEXT)
    set_attr(schema, "entry_schema", lambda: upcoming)
    set_attr(schema, "_fast_validator", functools.cache(schema._fast_validator.__wrapped__))
    set_attr(schema, "_full_validator", functools.cache(schema._full_validator.__wrapped__))
    set_attr(upgrade, "STEPS", {**upgrade.STEPS, CURRENT: move_recorder})


def die_after_writes(count: int) -> None:
    """SIGKILL this process when it is about to replace entry file number count + 1."""
    real, done = atomic.write_text, []

    def write_text(path: Path, text: str, *, exclusive: bool = False) -> None:
        if len(done) == count:
            os.kill(os.getpid(), signal.SIGKILL)
        real(path, text, exclusive=exclusive)
        done.append(path)

    atomic.write_text = write_text


LAUNCHER = """
import os, sys
sys.path.insert(0, {tests!r})
import test_migrate
test_migrate.enter_next_version(setattr)
if os.environ.get("KILL_AFTER"):
    test_migrate.die_after_writes(int(os.environ["KILL_AFTER"]))
from kb.cli import main
main()
"""


def run_next(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real `kb` CLI in a fresh process that is a kb of the next version."""
    code = LAUNCHER.format(tests=str(REPO / "tests"))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


@pytest.fixture(scope="session")
def validator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the next version's compiled validator, so it is made once."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture
def next_version(monkeypatch: pytest.MonkeyPatch, validator_cache: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(validator_cache))
    enter_next_version(monkeypatch.setattr)


@pytest.fixture
def corpus(kb: KnowledgeBase, validator_cache: Path, monkeypatch: pytest.MonkeyPatch) -> KnowledgeBase:
    """The knowledge base holding a copy of the corpus (entries and the one attachment folder)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(validator_cache))  # inherited by the subprocesses
    for item in CORPUS.iterdir():
        if item.is_dir():
            shutil.copytree(item, kb.entries_path / item.name)
        elif item.suffix == ".md":
            shutil.copyfile(item, kb.entries_path / item.name)
    # The frozen corpus keeps its entries, not all their attachments: the others stand in empty, since kb check
    # names an attachment that is listed and missing.
    for path in CORPUS_ENTRIES:
        for attachment in Entry.read(path).data.get("attachments") or []:
            target = kb.entries_path / attachment["path"]
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
    return kb


def snapshot(kb: KnowledgeBase) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(kb.entries_path.glob("*.md"))}


def body_of(text: bytes) -> bytes:
    """Everything after the line that closes the front matter."""
    lines = text.split(b"\n")
    closing = next(i for i in range(1, len(lines)) if lines[i].rstrip(b"\r") in (b"---", b"..."))
    return b"\n".join(lines[closing + 1 :])


# --- Schema 1 is read by this kb and every later one --------------------------------------------------------


def test_the_corpus_is_frozen() -> None:
    pinned = dict(line.split("  ", 1)[::-1] for line in MANIFEST.read_text().splitlines())
    present = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file() and p != MANIFEST}
    assert present == set(pinned), "files were added to or removed from the frozen schema-1 corpus"
    for name, digest in pinned.items():
        assert hashlib.sha256((CORPUS / name).read_bytes()).hexdigest() == digest, f"{name} was edited"


def test_the_corpus_covers_every_kind_status_and_section_of_schema_1() -> None:
    entries = [Entry.read(path) for path in CORPUS_ENTRIES]
    assert {e.kind for e in entries} == V1_KINDS
    assert {e.status for e in entries if e.kind == "run"} == V1_STATUSES
    assert set().union(*(e.data for e in entries)) >= V1_SECTIONS
    assert {e.get("failure.class") for e in entries} >= {"oom", "compile_error", "compile_timeout", "crash"}
    triggers = [t for e in entries for t in e.get("decision.triggers", [])]
    assert {t.split(":")[0] for t in triggers} == {"release", "when", "after", "newer-evidence"}
    assert any(e.get("links.supersedes") for e in entries)
    assert {e.get("provenance.source") for e in entries} == {"measured", "imported", "reported", None}


def test_every_schema_1_entry_reads_indexes_and_renders(corpus: KnowledgeBase, tmp_path: Path) -> None:
    from rich.console import Console

    from kb.terminal.rich_text import entry_view

    problems: list = []
    entries = list(corpus.iter_entries(problems))
    assert problems == [] and len(entries) == len(CORPUS_ENTRIES)
    with open(os.devnull, "w") as nowhere:
        for entry in entries:
            screen = Console(width=120, record=True, file=nowhere)
            screen.print(entry_view(entry))
            assert entry.title.split()[0] in screen.export_text(), entry.id

    indexed = run_kb("index", "--rebuild")
    assert indexed.returncode == 0 and "skipped" not in indexed.stderr, indexed.stderr
    checked = run_kb("check")
    assert (checked.returncode, checked.stderr) == (0, f"{len(entries)} entries checked, 0 problems\n")
    listed = json_data(run_kb("ls", "--json", "--limit", "0").stdout)
    assert sorted(row["id"] for row in listed) == sorted(e.id for e in entries)
    found = run_kb("search", "failure:oom", "--json")
    assert {row["id"] for row in json_data(found.stdout)} == {e.id for e in entries if e.get("failure.class") == "oom"}
    shown = run_kb("show", "2026-01-06-hand-written-run-000003")
    assert shown.returncode == 0 and "The compiled graph keeps activations" in shown.stdout

    built = run_kb("site", "build", "--out", str(tmp_path / "site"))
    assert built.returncode == 0, built.stderr
    for entry in entries:
        page = (tmp_path / "site" / "entries" / f"{entry.id}.html").read_text()
        assert entry.id in page


# --- The chain of steps -------------------------------------------------------------------------------------


def test_there_is_one_step_for_every_version_below_the_current_one() -> None:
    assert sorted(upgrade.STEPS) == list(range(1, schema.SCHEMA_VERSION))


def test_current_entries_need_no_migration(corpus: KnowledgeBase) -> None:
    before = snapshot(corpus)
    for args in (["migrate"], ["migrate", "--write"]):
        result = run_kb(*args)
        assert (result.returncode, result.stdout) == (0, "")
        done = "0 migrated" if "--write" in args else "0 to migrate"
        assert result.stderr == f"{done}, {len(before)} already at schema {CURRENT}, 0 skipped\n"
    assert snapshot(corpus) == before
    assert not (corpus.cache_path / migrate.BACKUPS).exists()


def test_entries_of_a_newer_schema_are_refused_by_reading_and_by_migrate(kb: KnowledgeBase) -> None:
    newer = kb.entries_path / "2026-11-30-newer-000000.md"
    text = "---\nschema: 7\nid: 2026-11-30-newer-000000\ntitle: Future\nkind: note\nrecorded: '2026-11-30'\n---\n"
    newer.write_text(text)
    error = (
        f"{newer}:2: schema: written by a newer kb (entry schema 7, this kb reads up to {CURRENT}); "
        "upgrade kb to read it"
    )
    shown = run_kb("show", str(newer))
    assert (shown.returncode, shown.stderr) == (1, f"kb: error: {error}\n")
    for args in (["migrate"], ["migrate", "--write"]):
        result = run_kb(*args)
        assert result.returncode == 1
        assert result.stderr.splitlines()[0] == f"kb: skipped {error}"
    assert newer.read_text() == text


# --- A kb of the next version: reading upgrades, and kb migrate rewrites ------------------------------------


@pytest.mark.usefixtures("next_version")
def test_reading_upgrades_an_older_entry_without_touching_what_it_was_given() -> None:
    from kb.model.frontmatter import load

    path = CORPUS / "2026-01-07-running-elsewhere-000004.md"
    raw = load(path.read_text(), path).data
    copy = json.loads(json.dumps(raw))
    upgraded = upgrade.upgrade(raw)
    assert json.loads(json.dumps(raw)) == copy  # a step works on a copy
    assert "recorder" not in upgraded and upgraded["schema"] == NEXT
    entry = Entry.read(path)
    assert entry.data["schema"] == NEXT and "recorder" not in entry.data
    assert entry.data["provenance"]["recorder"] == {
        "host": "trn2-node-12",
        "pid": 4242,
        "process_started": 1767772800.5,
    }
    for path in CORPUS_ENTRIES:  # every schema-1 entry reads as the next version
        assert Entry.read(path).data["schema"] == NEXT


def test_a_dry_run_lists_and_diffs_and_changes_nothing(corpus: KnowledgeBase) -> None:
    before = snapshot(corpus)
    listed = run_next("migrate")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"would migrate entries/{name}: schema {CURRENT} -> {NEXT}" for name in sorted(before)
    ]
    assert listed.stderr.endswith(
        f"{len(before)} to migrate, 0 already at schema {NEXT}, 0 skipped; "
        "run 'kb migrate --write' to rewrite them (a backup is made first)\n"
    )
    diffed = run_next("migrate", "--diff")
    name = "entries/2026-01-07-running-elsewhere-000004.md"
    start = diffed.stdout.index(f"--- a/{name}\n")
    hunk = diffed.stdout[start : diffed.stdout.index("--- a/", start + 1)]
    assert hunk.replace(f"+schema: {NEXT}", "+schema: NEXT") == (
        f"--- a/{name}\n+++ b/{name}\n"
        "@@ -1,5 +1,5 @@\n ---\n-schema: 1\n+schema: NEXT\n id: 2026-01-07-running-elsewhere-000004\n"
        " title: A run still going on another machine\n kind: run\n"
        "@@ -9,6 +9,10 @@\n   source: measured\n   tool: kb record\n   environment: run_time\n"
        "+  recorder:\n+    host: trn2-node-12\n+    pid: 4242\n+    process_started: 1767772800.5\n"
        " workload:\n   name: llama-tiny\n backend: neuron\n"
        "@@ -19,10 +23,6 @@\n   cwd: /home/me/project\n   exit_code: null\n   signal: null\n"
        "-recorder:\n-  host: trn2-node-12\n-  pid: 4242\n-  started: 1767772800.5\n"
        " timings:\n   started: '2026-01-07T08:00:01Z'\n ...\n\n"
    )
    shown = run_next("show", "--json", "2026-01-07-running-elsewhere-000004")  # read before any rewrite
    assert json_data(shown.stdout)["front_matter"]["provenance"]["recorder"]["process_started"] == 1767772800.5
    assert snapshot(corpus) == before
    assert not (corpus.cache_path / migrate.BACKUPS).exists()


def test_write_backs_up_then_rewrites_keeping_bodies_and_comments(corpus: KnowledgeBase) -> None:
    before = snapshot(corpus)
    result = run_next("migrate", "--write")
    assert result.returncode == 0, result.stderr
    (backup,) = (corpus.cache_path / migrate.BACKUPS).glob("migrate-*.tar.gz")
    assert result.stderr.splitlines()[0] == f"kb: backup of the files as they were: {backup}"
    assert result.stderr.splitlines()[-1] == f"{len(before)} migrated, 0 already at schema {NEXT}, 0 skipped"
    with tarfile.open(backup) as archive:
        saved = {Path(m.name).name: archive.extractfile(m).read() for m in archive.getmembers()}
    assert saved == before

    after = snapshot(corpus)
    for name, text in after.items():
        assert f"schema: {NEXT}".encode() in [line.rstrip(b"\r") for line in text.split(b"\n")[:3]], name
        assert body_of(text) == body_of(before[name]), name
    assert after["2026-01-08-windows-note-000005.md"].startswith(f"---\r\nschema: {NEXT}\r\n".encode())
    assert after["2026-01-08-bom-note-000006.md"].startswith(b"\xef\xbb\xbf---\n")
    hand = after["2026-01-06-hand-written-run-000003.md"].decode()
    for kept in ("# Written by hand in an editor", "  lr: 0.10          # stays the text 0.10", "tags: [hand-written"):
        assert kept in hand

    checked = run_next("check")
    assert checked.returncode == 0 and checked.stderr == f"{len(after)} entries checked, 0 problems\n"
    again = run_next("migrate", "--write")
    assert (again.returncode, again.stdout) == (0, "")
    assert again.stderr == f"0 migrated, {len(after)} already at schema {NEXT}, 0 skipped\n"
    assert snapshot(corpus) == after
    assert len(list((corpus.cache_path / migrate.BACKUPS).iterdir())) == 1


def test_broken_files_are_named_by_line_and_the_rest_migrated(corpus: KnowledgeBase) -> None:
    broken = {
        "2026-02-01-bad-yaml-000000.md": "---\nschema: 1\nid: 2026-02-01-bad-yaml-000000\ntitle: [unclosed\n---\n",
        "2026-02-01-bad-kind-000000.md": (
            "---\nschema: 1\nid: 2026-02-01-bad-kind-000000\ntitle: x\nkind: experiment\n"
            "recorded: '2026-02-01T00:00:00Z'\n---\n"
        ),
    }
    for name, text in broken.items():
        (corpus.entries_path / name).write_text(text)
    result = run_next("migrate", "--write")
    assert result.returncode == 1
    skipped = [line for line in result.stderr.splitlines() if line.startswith("kb: skipped")]
    where = corpus.entries_path
    assert skipped == [
        f"kb: skipped {where}/2026-02-01-bad-kind-000000.md:5: kind: 'experiment' is not one of: "
        "run, coverage, decision, report, note, release",
        f"kb: skipped {where}/2026-02-01-bad-yaml-000000.md:4: front matter is not valid YAML: "
        "did not find expected ',' or ']' (while parsing a flow sequence begun on this line)",
    ]
    assert result.stderr.splitlines()[-1] == f"{len(CORPUS_ENTRIES)} migrated, 0 already at schema {NEXT}, 2 skipped"
    for name, text in broken.items():
        assert (where / name).read_text() == text


def kill_points(files: int) -> list[int]:
    return list(range(files)) if KILL_POINTS == "all" else [files // 2]


def test_a_kill_at_any_point_of_a_write_loses_nothing(corpus: KnowledgeBase, tmp_path: Path) -> None:
    original = snapshot(corpus)
    assert run_next("migrate", "--write").returncode == 0
    reference = snapshot(corpus)
    for point in kill_points(len(original)):
        for path in corpus.entries_path.glob("*.md"):
            path.write_bytes(original[path.name])
        shutil.rmtree(corpus.cache_path / migrate.BACKUPS)
        killed = run_next("migrate", "--write", env={"KILL_AFTER": str(point)})
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        state = snapshot(corpus)
        assert sum(state[name] == reference[name] for name in state) == point
        assert all(state[name] in (original[name], reference[name]) for name in state)
        (backup,) = (corpus.cache_path / migrate.BACKUPS).glob("*.tar.gz")
        with tarfile.open(backup) as archive:
            assert len(archive.getmembers()) == len(original)
        assert [p.name for p in corpus.entries_path.glob(".*")] == []  # no temporary file left behind
        finished = run_next("migrate", "--write")
        assert finished.returncode == 0, finished.stderr
        assert snapshot(corpus) == reference, f"killed after {point} files"


# --- Generated entries: the rewrite reads back as the upgraded entry, body and all --------------------------

text_values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
bodies = st.text(max_size=200).map(lambda body: "" if body.startswith(("---", "...")) else body)
comments = st.lists(st.sampled_from(["# a comment", "", "#"]), max_size=2)


@st.composite
def schema_1_entries(draw: st.DrawFn) -> str:
    """The text of a schema-1 entry: kb's own layout or hand-edited, with or without a recorder."""
    fields: dict[str, Any] = {"status": "completed", "tags": draw(st.lists(st.sampled_from(["a", "b.c"]), max_size=2))}
    if draw(st.booleans()):
        fields["recorder"] = {"host": draw(text_values), "pid": draw(st.integers(0, 2**22)), "started": 1.5}
    if draw(st.booleans()):
        fields["provenance"] = {"source": "measured", "tool": draw(text_values)}
    fields["x_notes"] = draw(st.dictionaries(st.sampled_from(["a", "b"]), text_values | st.floats(), max_size=2))
    entry = new_entry("2026-03-01-gen-000000", draw(text_values.filter(str.strip)) or "t", "run",
                      recorded="2026-03-01T00:00:00Z", **fields)  # fmt: skip
    entry.data["schema"] = CURRENT  # written by this kb, read by the next
    entry.body = draw(bodies)
    lines = entry.serialise().split("\n")
    for _ in range(draw(st.integers(0, 3))):  # hand edits: comment lines above top-level fields
        tops = [i for i in range(2, len(lines)) if lines[i][:1].isalpha()]
        if tops:
            at = draw(st.sampled_from(tops))
            lines[at:at] = draw(comments)
    return "\n".join(lines)


@pytest.mark.usefixtures("next_version")
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=schema_1_entries())
def test_every_rewrite_reads_back_as_the_upgraded_entry(text: str) -> None:
    path = Path("entries/gen.md")
    from kb.model.frontmatter import load

    doc = load(text, path)
    change = migrate.migrate_text(text, path)
    assert change is not None and change.before == text
    again = Entry.parse(change.after, path)
    assert migrate._same(again.data, schema.coerce_entry(upgrade.upgrade(doc.data)))
    assert again.body == doc.body
    assert migrate.migrate_text(change.after, path) is None  # idempotent
    if "recorder" not in doc.data:  # only `schema` changes: every comment stays where it was
        comments = [[line for line in t.split("\n") if line.startswith("#")] for t in (text, change.after)]
        assert comments[0] == comments[1]


def test_a_file_that_cannot_be_read_as_utf8_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes(b"---\nschema: 1\ntitle: caf\xe9\n---\n")
    with pytest.raises(EntryError) as caught:
        migrate.read_text(path)
    assert str(caught.value) == f"{path}: not UTF-8 text (byte 24); save it as UTF-8"
