"""What made indexing and searching faster keeps the answers: batched writes, the lean start of a command, the
snippets cut in the ranking query, the validator without locals()."""

from __future__ import annotations

import ast
import signal
import sqlite3
import subprocess
import sys
import time

import fastjsonschema
import pytest
from conftest import json_data, run_kb, write_entry

from bench.generate import generate
from kb.cli import COMMANDS
from kb.index import fulltext, look, parse, stored_json, sync
from kb.index.db import connect, index_path
from kb.index.query import Filters, search
from kb.model import validation as schema
from kb.model.entry import new_entry
from kb.store.knowledge_base import KnowledgeBase


def _rows(kb: KnowledgeBase) -> tuple[list, list, list, list]:
    db = connect(index_path(kb.cache_path))
    try:
        return (
            db.execute("SELECT id, path, title, status FROM entries ORDER BY id").fetchall(),
            db.execute("SELECT path, entry_id FROM files ORDER BY path").fetchall(),
            db.execute("SELECT path, field, message FROM problems ORDER BY path").fetchall(),
            sorted(fulltext.indexed_ids(db)),
        )
    finally:
        db.close()


def _runs(kb: KnowledgeBase, count: int) -> None:
    """Completed runs 2026-05-01-run-000000, 2026-05-02-run-000001, ... (at most 9)."""
    for n in range(count):
        write_entry(kb, f"2026-05-0{n + 1}-run-00000{n}", recorded=f"2026-05-0{n + 1}T10:00:00Z", status="completed")


def test_entries_written_in_batches_or_parsed_by_workers_are_those_written_at_once(
    kb: KnowledgeBase, monkeypatch
) -> None:
    _runs(kb, 7)
    twin = (kb.entries_path / "2026-05-01-run-000000.md").read_text()  # the same id twice, batches apart
    (kb.entries_path / "2026-05-09-twin.md").write_text(twin)
    sync.sync(kb, rebuild=True)
    whole = _rows(kb)
    monkeypatch.setattr(sync, "WRITE_BATCH", 2)
    sync.sync(kb, rebuild=True)
    assert _rows(kb) == whole
    monkeypatch.setattr(parse, "PARALLEL_FILES", 1)  # parsed by worker processes, in chunks of 3
    monkeypatch.setattr(parse, "CHUNK", 3)
    sync.sync(kb, rebuild=True)
    assert _rows(kb) == whole
    assert [problem[:2] for problem in whole[2]] == [("2026-05-09-twin.md", "id")]

    # A rename and an edit in one sync, each in its own batch.
    (kb.entries_path / "2026-05-02-run-000001.md").rename(kb.entries_path / "2026-05-02-moved.md")
    edited = kb.entries_path / "2026-05-03-run-000002.md"
    edited.write_text(edited.read_text().replace("status: completed", "status: failed"))
    report = sync.sync(kb)
    assert (report.added, report.updated, report.removed) == (0, 2, 0)
    entries, files, _, ids = _rows(kb)
    assert ("2026-05-02-run-000001", "2026-05-02-moved.md") in [(row[0], row[1]) for row in entries]
    assert ("2026-05-03-run-000002", "2026-05-03-run-000002.md", "2026-05-03-run-000002", "failed") in entries
    assert len(ids) == len(entries) == 7 and len(files) == 8


def test_a_sync_that_finds_nothing_changed_leaves_the_index_as_it_was(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-05-01-run-000000", recorded="2026-05-01T10:00:00Z")
    sync.sync(kb)
    reader = sqlite3.connect(index_path(kb.cache_path))
    version = reader.execute("PRAGMA data_version").fetchone()
    assert sync.sync(kb).unchanged == 1
    assert reader.execute("PRAGMA data_version").fetchone() == version  # no other connection committed anything


def test_each_column_of_an_entries_row_holds_its_own_field(kb: KnowledgeBase) -> None:
    # The workers make the row as a tuple, matched to its columns by position: a swap would go unseen otherwise.
    write_entry(kb, "2026-05-01-run-000000", "A title", recorded="2026-05-01T10:00:00Z", status="failed", author="ada",
                backend="neuron", mode="compiled", workload={"name": "w", "task": "train", "model": "LSTM"},
                provenance={"source": "measured", "environment": "record_time"}, hardware={"hostname": "h1"},
                failure={"class": "oom"}, attachments=[{"path": "a.txt"}],
                timings={"wall_s": 1.5, "compile_s": 2.5, "first_step_s": 3.5, "step_s": {"median": 4.5}},
                git={"commit": "abc123"})  # fmt: skip
    sync.sync(kb)
    db = connect(index_path(kb.cache_path))
    try:
        db.row_factory = sqlite3.Row
        row = dict(db.execute("SELECT * FROM entries").fetchone())
    finally:
        db.close()
    assert stored_json.unpacked(row.pop("front_matter"))["hardware"] == {"hostname": "h1"}
    assert row == {
        "n": 1, "id": "2026-05-01-run-000000", "path": "2026-05-01-run-000000.md", "title": "A title", "kind": "run",
        "status": "failed", "recorded": "2026-05-01T10:00:00Z", "author": "ada", "backend": "neuron",
        "mode": "compiled", "workload": "w", "task": "train", "model": "LSTM", "source": "measured", "host": "h1",
        "failure_class": "oom", "wall_s": 1.5, "compile_s": 2.5, "first_step_s": 3.5, "step_s_median": 4.5,
        "git_commit": "abc123", "environment": "record_time", "attachments": '["a.txt"]',
    }  # fmt: skip


def test_an_edit_or_a_deletion_leaves_no_rows_of_entries_gone(kb: KnowledgeBase) -> None:
    # A sync writes with the foreign keys off and deletes an entry's normalised rows itself.
    edited = write_entry(
        kb,
        "2026-05-01-run-000000",
        recorded="2026-05-01T10:00:00Z",
        status="failed",
        tags=["old"],
        settings={"batch": 8},
        failure={"class": "oom", "message": "out of memory"},
    )
    gone = write_entry(
        kb, "2026-05-02-run-000001", recorded="2026-05-02T10:00:00Z", status="completed", tags=["x"], settings={"a": 1}
    )
    sync.sync(kb)
    edited.write_text(edited.read_text().replace("- old", "- new").replace("status: failed", "status: completed"))
    gone.unlink()
    assert sync.sync(kb).removed == 1
    db = connect(index_path(kb.cache_path))
    try:
        for table in ("tags", "settings", "versions", "metrics", "timings", "failures", "links", "accelerators"):
            assert not db.execute(f"SELECT * FROM {table} WHERE entry NOT IN (SELECT n FROM entries)").fetchall()
        assert db.execute("SELECT tag FROM tags").fetchall() == [("new",)]
        assert db.execute("SELECT name, number FROM settings").fetchall() == [("batch", 8.0)]
        assert db.execute("SELECT class FROM failures").fetchall() == [("oom",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        db.close()


def test_a_build_interrupted_midway_leaves_no_index_and_a_sync_interrupted_leaves_it_as_it_was(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build is written without a journal: what it wrote cannot be rolled back, so it is removed.
    _runs(kb, 6)
    read, calls = parse.read, []

    def interrupted(job: parse.Job) -> parse.Read:
        calls.append(job)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return read(job)

    monkeypatch.setattr(sync, "WRITE_BATCH", 2)  # a batch written before the interruption
    monkeypatch.setattr(parse, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sync.sync(kb)
    assert not index_path(kb.cache_path).exists()
    monkeypatch.setattr(parse, "read", read)
    sync.sync(kb)
    whole = _rows(kb)
    assert len(whole[0]) == len(whole[3]) == 6
    raw = sqlite3.connect(index_path(kb.cache_path))  # not connect(), which makes every file WAL
    assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # the build switched it back at its end
    raw.close()

    # A sync of an index that was whole is rolled back, through its journal.
    for n in range(6):
        path = kb.entries_path / f"2026-05-0{n + 1}-run-00000{n}.md"
        path.write_text(path.read_text().replace("title: ", "title: edited "))
    calls.clear()
    monkeypatch.setattr(parse, "read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sync.sync(kb)
    assert _rows(kb) == whole
    db = connect(index_path(kb.cache_path))
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()


def test_a_build_is_written_without_a_journal_unless_another_connection_has_the_new_file_open(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(kb, 3)
    modes, look_at_every_file = [], look.look

    def noting_the_journal(kb: KnowledgeBase, db: sqlite3.Connection, **options) -> look.Look:
        modes.append(db.execute("PRAGMA journal_mode").fetchone()[0])
        return look_at_every_file(kb, db, **options)

    monkeypatch.setattr(look, "look", noting_the_journal)
    assert sync.sync(kb, rebuild=True).added == 3
    assert modes == ["off"]

    # A reader that opened the new file before the build began: the build is written through the log, as any sync
    # is (it failed: "database is locked").
    opened, readers = sync.connect, []

    def with_a_reader(path):
        db = opened(path)
        readers.append(sqlite3.connect(path))
        readers[-1].execute("SELECT count(*) FROM entries").fetchone()
        return db

    monkeypatch.setattr(sync, "connect", with_a_reader)
    assert sync.sync(kb, rebuild=True).added == 3
    assert modes == ["off", "wal"]
    assert readers[0].execute("SELECT count(*) FROM entries").fetchone() == (3,)


def test_a_build_killed_midway_is_started_over_by_the_next_command(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = generate(tmp_path / "generated", 1500, seed=2)  # parsed by workers, written in batches
    monkeypatch.setenv("KB_HOME", str(kb.root))
    index = index_path(kb.cache_path)
    build = subprocess.Popen([sys.executable, "-m", "kb", "index", "--rebuild"], stderr=subprocess.DEVNULL)
    try:
        while build.poll() is None and not (index.exists() and index.stat().st_size > 4_000_000):
            time.sleep(0.005)  # until the build has written a few MB of its pages into the file
    finally:
        build.kill()
        build.wait()
    assert build.returncode == -signal.SIGKILL, "the build ended before it was killed: give it more entries"
    listed = run_kb("ls", "--json", "--limit", "0")
    assert listed.returncode == 0, listed.stderr
    assert len(json_data(listed.stdout)) == 1500
    db = connect(index)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        db.execute(f"INSERT INTO {fulltext.TABLE} ({fulltext.TABLE}) VALUES ('integrity-check')")
        assert len(fulltext.indexed_ids(db)) == 1500
    finally:
        db.close()


@pytest.fixture
def generated(tmp_path) -> KnowledgeBase:
    kb = generate(tmp_path / "generated", 300, seed=1)
    sync.sync(kb)
    return kb


# Tables that say when or how a sync looked at the folder, not what the entries are.
_LOOKS = {"folder_looks", "folder_files", "watch_position"}


def _schema(db: sqlite3.Connection) -> list[tuple]:
    return db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()


def _whole(kb: KnowledgeBase) -> dict[str, list]:
    """The index's schema and every table's rows (sorted; the full-text table by its words and rows), but _LOOKS."""
    db = connect(index_path(kb.cache_path))
    try:
        master = _schema(db)
        tables = [name for kind, name, _, sql in master if kind == "table" and name not in _LOOKS
                  and not name.startswith((f"{fulltext.TABLE}_", "sqlite_")) and "VIRTUAL" not in sql]  # fmt: skip
        whole = {name: sorted(db.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in tables}
        whole["schema"] = master
        whole[fulltext.TABLE] = db.execute(f"SELECT rowid, * FROM {fulltext.TABLE} ORDER BY rowid").fetchall()
        whole[fulltext.VOCABULARY] = db.execute(f"SELECT * FROM {fulltext.VOCABULARY} ORDER BY term").fetchall()
        return whole
    finally:
        db.close()


def test_a_build_from_nothing_makes_the_index_that_adding_its_entries_to_an_index_makes(
    generated: KnowledgeBase, tmp_path
) -> None:
    """A build makes the board's cells and the growing tables' indexes once at its end (db.loading_in_bulk); a sync
    into an index that exists keeps them up entry by entry. The two are the same."""
    built = _whole(generated)
    assert all(built[table] for table in ("board_rows", "board_cells", "release_rows", "settings", "versions"))
    made = connect(tmp_path / "made.db")  # the schema as kb.index.schema makes it
    try:
        assert built["schema"] == _schema(made)
    finally:
        made.close()
    away = tmp_path / "away"
    generated.entries_path.rename(away)
    generated.entries_path.mkdir()
    sync.sync(generated, rebuild=True)  # an index without entries
    generated.entries_path.rmdir()
    away.rename(generated.entries_path)
    assert sync.sync(generated).added == 300
    assert _whole(generated) == built


@pytest.mark.parametrize("query", ["compile timeout", "out of memory", '"flex attention"', "neuron OR xla",
                                   "backend:neuron compile", "flex*", "NOT timeout"])  # fmt: skip
def test_snippets_cut_while_ranking_are_those_cut_for_the_hits(generated: KnowledgeBase, query: str) -> None:
    db = connect(index_path(generated.cache_path))
    hits = search(db, query, Filters(), limit=20)
    assert hits
    rowids = {hit.id: rowid for hit, _ in hits for (rowid,) in db.execute("SELECT rowid FROM entries WHERE id = ?",
                                                                          [hit.id])}  # fmt: skip
    compiled = fulltext.compile_query(query, db)
    apart = fulltext.snippets(db, compiled.match, list(rowids.values()))
    assert {hit.id: hit.snippet for hit, _ in hits} == {entry_id: apart[rowid] for entry_id, rowid in rowids.items()}
    # The same hits through the other path (a filter that keeps them all) have the same snippets.
    kinds = {row["kind"] for _, row in hits}
    if len(kinds) == 1:
        filtered = search(db, query, Filters(kind=kinds.pop()), limit=20)
        assert {hit.id: hit.snippet for hit, _ in filtered} == {hit.id: hit.snippet for hit, _ in hits}


def test_the_validator_names_a_refused_value_as_fastjsonschema_does() -> None:
    data = new_entry("2026-05-01-x-000001", "t", "note", recorded="2026-05-01T10:00:00Z", tags=["ok"]).data
    code = schema._without_locals(fastjsonschema.compile_to_code(schema.entry_schema()))
    assert "locals()" not in code
    names = []
    for validate in (schema._fast_validator(), fastjsonschema.compile(schema.entry_schema())):
        validate(data)
        for broken in ({**data, "tags": ["ok", "not ok!"]}, {**data, "links": {"reference": ["nonsense id"]}}):
            with pytest.raises(fastjsonschema.JsonSchemaValueException) as raised:
                validate(broken)
            names.append(raised.value.name)
    assert names[:2] == names[2:] == ["data.tags[1]", "data.links.reference"]


def test_a_query_process_loads_neither_yaml_nor_the_other_commands(kb: KnowledgeBase) -> None:
    # Only reading an entry file needs YAML (a running entry's, to settle it, would): here every one is indexed.
    write_entry(kb, "2026-05-01-run-000000", recorded="2026-05-01T10:00:00Z", status="failed", body="A timeout.")
    sync.sync(kb)
    loaded = "sorted(m for m in sys.modules if m.startswith('kb.commands.') or m == 'yaml')"
    code = (
        f"import atexit, sys; atexit.register(lambda: print({loaded}, file=sys.stderr)); "
        f"sys.argv = ['kb', '--kb', {str(kb.root)!r}, 'search', 'timeout', '--json']; "
        "from kb.launch import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json_data(out.stdout, "search")[0]["id"] == "2026-05-01-run-000000"
    loaded_now = set(ast.literal_eval(out.stderr.splitlines()[-1]))
    assert "yaml" not in loaded_now
    assert loaded_now & {f"kb.commands.{name}" for name in COMMANDS} == {"kb.commands.search"}  # no other command


def test_typing_an_entry_does_not_load_yaml() -> None:
    code = "import sys, kb.model.validation, kb.model.entry, kb.index.query; "
    code += "print(sorted(m for m in sys.modules if 'yaml' in m))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_the_workers_are_forked_before_the_caller_starts_a_thread_of_its_own(kb: KnowledgeBase) -> None:
    # kb index on a terminal starts its progress bar's thread as it begins to read; the workers are forked before,
    # so a build in a terminal is parsed by them too (it was read in one process).
    _runs(kb, 4)
    code = (
        "import os, sys, threading, time, psutil\n"
        "from pathlib import Path\n"
        "from kb.index import parse\n"
        "parse.PARALLEL_FILES, parse.CHUNK = 1, 1\n"
        "os.sched_getaffinity = lambda pid: {0, 1}\n"
        "root = Path(sys.argv[1])\n"
        "reads = parse.read_all([(path, root, None) for path in sorted((root / 'entries').glob('*.md'))])\n"
        "threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n"
        "print(len(psutil.Process().children()), [read.rows.id for read in reads])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(kb.root)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    workers, ids = done.stdout.split(" ", 1)
    assert int(workers) == 2, done.stdout
    assert ids.strip() == str([f"2026-05-0{n + 1}-run-00000{n}" for n in range(4)])
