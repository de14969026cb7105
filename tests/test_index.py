"""The indexes on real files: search, filters, sorting, incremental sync, broken entries, concurrency, rebuilds."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from array import array
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import json_data, run_kb, watching, write_entry

from kb.errors import KbError
from kb.index import fulltext, look, parse
from kb.index.db import connect, index_path
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase
from kb.store.reading import MAX_ENTRY_BYTES


@pytest.fixture
def sample(kb: KnowledgeBase) -> KnowledgeBase:
    write_entry(
        kb,
        "2026-03-01-flex-trn3-000001",
        "FlexAttention on Trainium3",
        recorded="2026-03-01T10:00:00Z",
        status="failed",
        backend="neuron",
        mode="compiled",
        workload={"name": "flex-attention"},
        tags=["trn3"],
        versions={"torch": "2.9.0", "torch-neuronx": "2.9.0.2.15.1"},
        failure={
            "class": "compile_timeout",
            "message": "neuronx-cc exceeded 1800 s on the flex attention kernel",
            "explanation": "the mask function made the compiler unroll every block",
        },
        metrics={"tokens_per_s": {"value": 900.0, "unit": "tokens/s"}},
    )
    write_entry(
        kb,
        "2026-06-01-flex-trn3-000002",
        "FlexAttention on Trainium3 again",
        recorded="2026-06-01T10:00:00Z",
        status="completed",
        backend="neuron",
        mode="compiled",
        workload={"name": "flex-attention"},
        versions={"torch": "2.13.0", "torch-neuronx": "2.13.3.0"},
        tags=["trn3", "rerun"],
        metrics={"tokens_per_s": {"value": 2400.0, "unit": "tokens/s"}},
        timings={"compile_s": 410.0},
    )
    write_entry(
        kb,
        "2026-05-01-llama-h100-000003",
        "Llama 3 8B pretraining on H100",
        recorded="2026-05-01T10:00:00Z",
        status="completed",
        backend="cuda",
        mode="compiled",
        workload={"name": "llama3-8b"},
        versions={"torch": "2.10.0"},
        metrics={"tokens_per_s": {"value": 12000.0, "unit": "tokens/s"}},
        timings={"compile_s": 95.0},
        body="Compiling took 95 s; steady state matched eager numerics.",
    )
    write_entry(
        kb,
        "2026-05-02-llama-mi300-000004",
        "Llama 3 8B pretraining on MI300X",
        recorded="2026-05-02T10:00:00Z",
        status="failed",
        backend="rocm",
        mode="eager",
        workload={"name": "llama3-8b"},
        versions={"torch": "2.1.0"},
        failure={"class": "oom", "message": "HIP out of memory"},
        body="## Output\n\n```text\ntorch.OutOfMemoryError: HIP out of memory. FlexAttention was not used.\n```\n",
    )
    write_entry(
        kb,
        "2026-04-01-semianalysis-000005",
        "Qwen3-32B on 16 Trainium2 chips",
        kind="report",
        recorded="2026-04-01T10:00:00Z",
        backend="neuron",
        provenance={"source": "reported", "publisher": "SemiAnalysis"},
        metrics={"tokens_per_s": {"value": 14156.0, "unit": "tokens/s"}},
    )
    return kb


def search(*args: str) -> list[str]:
    result = run_kb("search", *args, "--json")
    assert result.returncode == 0, result.stderr
    return [row["id"] for row in json_data(result.stdout)]


def ls(*args: str) -> list[str]:
    result = run_kb("ls", *args, "--json")
    assert result.returncode == 0, result.stderr
    return [row["id"] for row in json_data(result.stdout)]


def test_a_word_only_in_a_failure_explanation_is_found(sample: KnowledgeBase) -> None:
    assert search("unroll") == ["2026-03-01-flex-trn3-000001"]


def test_fielded_queries_phrases_or_not_and_stemming(sample: KnowledgeBase) -> None:
    assert search('backend:neuron failure:compile_timeout "flex attention"') == ["2026-03-01-flex-trn3-000001"]
    assert set(search("backend:rocm OR backend:cuda")) == {
        "2026-05-01-llama-h100-000003",
        "2026-05-02-llama-mi300-000004",
    }
    assert "2026-05-02-llama-mi300-000004" not in search("llama NOT oom")
    assert search("compile")[0] in {"2026-05-01-llama-h100-000003", "2026-03-01-flex-trn3-000001"}
    assert "2026-05-01-llama-h100-000003" in search("compiles")  # "Compiling" in its notes, by stem
    assert search("versions:torch=2.9.0") == ["2026-03-01-flex-trn3-000001"]
    assert search("tag:rerun") == ["2026-06-01-flex-trn3-000002"]


def test_title_matches_rank_above_log_tail_matches(sample: KnowledgeBase) -> None:
    found = search("flexattention")
    assert found.index("2026-03-01-flex-trn3-000001") < found.index("2026-05-02-llama-mi300-000004")


def test_search_results_carry_snippets(sample: KnowledgeBase) -> None:
    rows = json_data(run_kb("search", "unroll", "--json").stdout)
    assert "**unroll**" in rows[0]["snippet"]
    assert rows[0]["status"] == "failed" and rows[0]["backend"] == "neuron"


def test_search_prints_each_result_with_its_snippet_as_written(sample: KnowledgeBase) -> None:
    # A snippet is shown as it was written, the matched word marked; Markdown in it is not interpreted.
    printed = run_kb("search", "unroll").stdout
    assert "2026-03-01-flex-trn3-000001" in printed and "FlexAttention on Trainium3" in printed
    assert "made the compiler unroll every block" in printed and "**" not in printed
    from kb.terminal.rich_text import snippet_text

    shown = snippet_text("a __dunder__ # **unroll** and **2**")
    assert shown.plain == "a __dunder__ # unroll and 2"
    assert [(shown.plain[span.start : span.end], span.style) for span in shown.spans] == [
        ("unroll", "bold"),
        ("2", "bold"),
    ]


def test_filters_narrow_search_and_ls_with_pep440_version_ranges(sample: KnowledgeBase) -> None:
    assert search("flexattention", "--status", "completed") == ["2026-06-01-flex-trn3-000002"]
    # 2.10.0 is newer than 2.9.0, which is newer than 2.1.0: version order, not text order.
    assert set(ls("--package", "torch>=2.9")) == {
        "2026-03-01-flex-trn3-000001",
        "2026-06-01-flex-trn3-000002",
        "2026-05-01-llama-h100-000003",
    }
    assert ls("--package", "torch>=2.9", "--backend", "neuron", "--failure", "compile_timeout") == [
        "2026-03-01-flex-trn3-000001"
    ]
    assert ls("--package", "torch-neuronx>=2.13") == ["2026-06-01-flex-trn3-000002"]
    assert ls("--kind", "report") == ["2026-04-01-semianalysis-000005"]
    assert ls("--since", "2026-05-01", "--until", "2026-05-31") == [
        "2026-05-02-llama-mi300-000004",
        "2026-05-01-llama-h100-000003",
    ]
    assert ls("--tag", "trn3", "--tag", "rerun") == ["2026-06-01-flex-trn3-000002"]


def test_ls_sorts_by_metrics_and_timings_and_writes_csv(sample: KnowledgeBase) -> None:
    assert ls("--sort", "metric.tokens_per_s", "--limit", "2") == [
        "2026-04-01-semianalysis-000005",
        "2026-05-01-llama-h100-000003",
    ]
    assert ls("--sort", "timings.compile_s", "--asc", "--limit", "1") == ["2026-05-01-llama-h100-000003"]
    csv_text = run_kb("ls", "--sort", "metric.tokens_per_s", "--limit", "1", "--csv").stdout
    header, first = csv_text.splitlines()[:2]
    assert header.startswith("id,title,kind,status") and first.startswith("2026-04-01-semianalysis-000005,")
    table = run_kb("ls", "--sort", "metric.tokens_per_s").stdout
    assert "\t14,156\t" in table.splitlines()[0]  # piped: tab-separated, the sort figure humanised


def test_edits_additions_deletions_and_renames_are_picked_up(sample: KnowledgeBase) -> None:
    assert search("cosmic") == []
    path = sample.entries_path / "2026-05-01-llama-h100-000003.md"
    path.write_text(path.read_text().replace("steady state matched", "cosmic rays matched"))
    assert search("cosmic") == ["2026-05-01-llama-h100-000003"]  # edited by hand: found at once
    moved = sample.entries_path / "2026" / path.name
    moved.parent.mkdir()
    path.rename(moved)
    assert search("cosmic") == ["2026-05-01-llama-h100-000003"]
    assert ls("--workload", "llama3-8b") == ["2026-05-02-llama-mi300-000004", "2026-05-01-llama-h100-000003"]
    moved.unlink()
    assert search("cosmic") == [] and ls("--workload", "llama3-8b") == ["2026-05-02-llama-mi300-000004"]
    write_entry(
        sample, "2026-07-01-new-000006", "A cosmic newcomer", recorded="2026-07-01T10:00:00Z", status="completed"
    )
    assert search("cosmic") == ["2026-07-01-new-000006"]


def test_same_content_with_a_new_mtime_is_not_parsed_again(sample: KnowledgeBase) -> None:
    assert sync(sample).added == 5
    first = sync(sample)
    path = sample.entries_path / "2026-05-01-llama-h100-000003.md"
    os.utime(path, (time.time() + 100, time.time() + 100))  # what a git checkout does
    again = sync(sample)
    assert (first.unchanged, again.updated, again.added, again.unchanged) == (5, 0, 0, 5)


def test_a_broken_entry_is_reported_and_the_rest_indexed(sample: KnowledgeBase) -> None:
    broken = sample.entries_path / "2026-01-01-broken-000009.md"
    broken.write_text(
        "---\nschema: 1\nid: 2026-01-01-broken-000009\ntitle: broken\nkind: wrong\n"
        "recorded: '2026-01-01T00:00:00Z'\n---\nunroll\n"
    )
    result = run_kb("ls", "--json")
    assert len(json_data(result.stdout)) == 5
    assert f"kb: skipped {broken}:5: kind: 'wrong' is not one of" in result.stderr
    check = run_kb("check")
    assert check.returncode == 1
    assert check.stdout.startswith(f"{broken}:5: kind: 'wrong' is not one of")
    assert check.stderr == "6 entries checked, 1 problem\n"
    broken.write_text(broken.read_text().replace("kind: wrong", "kind: note"))
    assert run_kb("check").returncode == 0  # fixed: found by the next command
    assert "2026-01-01-broken-000009" in search("unroll")


def test_check_finds_links_to_nothing_and_duplicate_ids(sample: KnowledgeBase) -> None:
    linking = write_entry(
        sample,
        "2026-08-01-rerun-000007",
        "Rerun",
        recorded="2026-08-01T10:00:00Z",
        status="completed",
        links={"rerun_of": "2026-01-01-nothing-000000"},
    )
    copy = sample.entries_path / "copy-of-flex.md"
    shutil.copy(sample.entries_path / "2026-03-01-flex-trn3-000001.md", copy)
    check = run_kb("check")
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    assert f"{linking}:9: links.rerun_of: no entry '2026-01-01-nothing-000000' in this knowledge base" in lines
    original = sample.entries_path / "2026-03-01-flex-trn3-000001.md"
    duplicate = f": id: the id 2026-03-01-flex-trn3-000001 is also used by {original}; give this one a new id"
    assert any(line.startswith(f"{copy}:") and line.endswith(duplicate) for line in lines), lines


def test_deleting_the_cache_loses_nothing_and_damage_is_repaired(sample: KnowledgeBase) -> None:
    before = ls()
    shutil.rmtree(sample.cache_path)
    assert ls() == before and search("unroll") == ["2026-03-01-flex-trn3-000001"]
    index_path(sample.cache_path).write_bytes(b"this is not a database" * 100)
    assert ls() == before
    db = connect(index_path(sample.cache_path))
    db.execute("DELETE FROM fulltext")  # words lost, the manifest intact: found again by a rebuild
    db.close()
    assert run_kb("index", "--rebuild").returncode == 0
    assert search("unroll") == ["2026-03-01-flex-trn3-000001"]
    assert run_kb("index", "--rebuild").stdout.startswith("Indexed: 5 added, 0 updated, 0 removed, 0 unchanged")


def test_an_index_made_under_another_entry_schema_is_rebuilt(sample: KnowledgeBase) -> None:
    # A kb reading a newer entry schema reads the same files differently: rows made by an older one are stale.
    from kb.index import schema

    sync(sample)
    db = sqlite3.connect(index_path(sample.cache_path))
    assert db.execute("SELECT format FROM index_format").fetchall() == [(schema.FORMAT,)]
    db.execute("UPDATE entries SET title = 'as an older kb read it'")
    db.execute("UPDATE index_format SET format = 'another'")  # another entry schema, rows or tables
    db.commit()
    db.close()
    assert run_kb("index").stdout.startswith("Indexed: 5 added")
    assert "as an older kb read it" not in run_kb("ls").stdout
    assert sync(sample).unchanged == 5  # once


def test_the_schema_is_pleasant_to_query_directly(sample: KnowledgeBase) -> None:
    sync(sample)
    db = sqlite3.connect(index_path(sample.cache_path))
    latest = db.execute("SELECT id FROM latest_runs WHERE workload = 'flex-attention'").fetchall()
    assert latest == [("2026-06-01-flex-trn3-000002",)]
    failed = db.execute("SELECT id, class FROM failed_runs ORDER BY id").fetchall()
    assert failed == [("2026-03-01-flex-trn3-000001", "compile_timeout"), ("2026-05-02-llama-mi300-000004", "oom")]
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("SELECT count(*) FROM index_format").fetchone() == (1,)
    # No trigger derives a row: a trigger only drops an entry's words with it (the rest goes by ON DELETE CASCADE).
    triggers = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    assert triggers == [("entries_fulltext",)]
    words = "SELECT e.id FROM fulltext JOIN entries e ON e.rowid = fulltext.rowid WHERE fulltext MATCH 'unroll'"
    assert db.execute(words).fetchall() == [("2026-03-01-flex-trn3-000001",)]


def test_concurrent_indexers_and_searchers_with_recordings(sample: KnowledgeBase) -> None:
    def record(index: int) -> int:
        return run_kb(
            "record", "--title", f"parallel {index}", "--", sys.executable, "-c", "print('quasar')"
        ).returncode

    def query(_: int) -> int:
        return run_kb("search", "quasar OR unroll", "--json").returncode

    def index(_: int) -> int:
        return run_kb("index").returncode

    with ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(record, i) for i in range(6)] + [pool.submit(query, i) for i in range(4)]
        futures += [pool.submit(index, i) for i in range(3)]
        assert [f.result() for f in futures] == [0] * 13
    assert len(search("quasar", "--limit", "50")) == 6
    db = connect(index_path(sample.cache_path))
    assert db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 11
    assert fulltext.count(db) == 11
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_bad_query_or_filter_is_a_clear_error(sample: KnowledgeBase) -> None:
    bad_spec = run_kb("ls", "--package", "torch>>2")
    assert bad_spec.returncode == 1 and bad_spec.stderr.startswith("kb: error: --package 'torch>>2': expected")
    bad_sort = run_kb("ls", "--sort", "speed")
    assert bad_sort.returncode == 1 and "metric.NAME" in bad_sort.stderr
    bad_date = run_kb("ls", "--since", "last week")
    assert bad_date.stderr == "kb: error: --since 'last week': expected a date like 2026-11-30\n"
    huge = "torch>=" + "9" * 5000  # past Python's limit on the digits of a number
    for command in (["ls"], ["search", "flex"]):
        too_long = run_kb(*command, "--package", huge)
        assert too_long.returncode == 1 and "a version number in it is too long" in too_long.stderr
        assert too_long.stderr.count("\n") == 1
        too_many = run_kb(*command, "--limit", str(2**63))
        assert too_many.stderr == f"kb: error: --limit {2**63}: give at most {2**63 - 1}\n"
        most = run_kb(*command, "--limit", str(2**63 - 1), "--json")
        assert most.returncode == 0 and most.stderr == "", most.stderr


def test_queries_do_not_import_heavy_modules_before_they_need_them() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kb", "search", "--help"], capture_output=True, text=True, check=True
    )
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
    assert not imported & {"whoosh", "sqlite_utils", "torch", "markdown", "markdown_it", "pygments"}


def test_a_touched_entry_file_keeps_its_entry(kb: KnowledgeBase) -> None:
    # A git checkout or a `touch` changes the modification time and not the text: nothing to index again.
    path = write_entry(kb, "2026-01-01-touched-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    assert sync(kb).added == 1
    path.touch()
    report = sync(kb)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)
    assert ls() == ["2026-01-01-touched-000001"]
    assert fulltext.count(connect(index_path(kb.cache_path))) == 1


@pytest.fixture
def any_time_vouches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every folder's ctime vouches for its names at once, instead of 2 s after (kb.store.folders.SETTLED_NS)."""
    monkeypatch.setattr(look, "SETTLED_NS", -(10**15))


def _looks(kb: KnowledgeBase) -> list[tuple]:
    """(folder, ctime_ns, names, below, signatures) of each folder stored, the folder as text."""
    db = connect(index_path(kb.cache_path))
    try:
        rows = db.execute(
            "SELECT folder, l.ctime_ns, f.names, l.below, f.signatures "
            "FROM folder_looks l JOIN folder_files f USING (folder) ORDER BY folder"
        ).fetchall()
    finally:
        db.close()
    return [(row[0].decode("utf-8", "surrogateescape"), *row[1:]) for row in rows]


def _restore_looks(kb: KnowledgeBase, rows: list[tuple], statement: str, *values: object) -> None:
    """Change the manifest by hand, with the looks as they were."""
    db = connect(index_path(kb.cache_path))
    with db:
        db.execute(statement, values)
        db.executemany(
            "INSERT OR REPLACE INTO folder_looks VALUES (?, ?, ?)",
            [(row[0].encode("utf-8", "surrogateescape"), row[1], row[3]) for row in rows],
        )
    db.close()


def _looks_are_the_manifest(kb: KnowledgeBase) -> bool:
    """Whether the stored looks name every indexed file with its signature, and nothing else."""
    db = connect(index_path(kb.cache_path))
    manifest = {row[0]: list(row[1:]) for row in db.execute("SELECT path, size, mtime_ns, ctime_ns, inode FROM files")}
    db.close()
    looked = {}
    for folder, _, names, _, signatures in _looks(kb):
        numbers = array("q", signatures).tolist()
        for i, name in enumerate(names.decode("utf-8", "surrogateescape").split("\0") if names else []):
            looked[folder + name] = numbers[4 * i : 4 * i + 4]
    return looked == manifest


def _edit(path: Path, word: str) -> None:
    path.write_text(path.read_text().replace("\n---\n", f"\n---\n{word}\n", 1))


def test_an_unchanged_folder_is_told_by_its_last_look_without_reading_the_manifest(kb: KnowledgeBase) -> None:
    first = write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    write_entry(kb, "2026-01-02-second-000002", recorded="2026-01-02T00:00:00Z", status="completed")
    assert sync(kb).added == 2
    # A manifest row no sync wrote: were the manifest read, this file would be read again.
    _restore_looks(kb, _looks(kb), "UPDATE files SET size = 0 WHERE path = ?", first.name)
    assert (sync(kb).unchanged, sync(kb).updated) == (2, 0)
    db = connect(index_path(kb.cache_path))
    assert db.execute("SELECT size FROM files WHERE path = ?", [first.name]).fetchone() == (0,)
    db.close()
    _edit(first, "quokka")  # any change: its size or time moves
    report = sync(kb)
    assert (report.updated, report.unchanged) == (1, 1)
    assert [row["id"] for row in json_data(run_kb("search", "quokka", "--json").stdout)] == ["2026-01-01-first-000001"]


@pytest.mark.usefixtures("any_time_vouches")
def test_a_folder_whose_time_vouches_is_not_listed_again_but_its_files_are_looked_at(kb: KnowledgeBase) -> None:
    first = write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    (kb.entries_path / "2026").mkdir()
    write_entry(kb, "2026-01-02-second-000002", recorded="2026-01-02T00:00:00Z", status="completed").rename(
        kb.entries_path / "2026" / "2026-01-02-second-000002.md"
    )
    assert sync(kb).added == 2
    assert [(row[0], row[1] is not None) for row in _looks(kb)] == [("", True), ("2026/", True)]
    # A name made in a folder moves its ctime: listed again. So does putting its modification time back, as
    # `rsync -a` or `tar` do over files made since: nothing can put a ctime back.
    third = write_entry(kb, "2026-01-03-third-000003", recorded="2026-01-03T00:00:00Z", status="completed")
    os.utime(kb.entries_path, ns=(1_767_225_600_000_000_000,) * 2)
    assert sync(kb).added == 1
    # Each file is still looked at: an edit in place moves only the file's own time.
    before = _looks(kb)[0][1]
    _edit(first, "wombat")
    report = sync(kb)
    assert (report.added, report.updated, report.unchanged) == (0, 1, 2)
    assert _looks(kb)[0][1] == before  # (not listed: the folder's ctime did not move)
    assert _looks_are_the_manifest(kb)  # (the file's size and time written in place)
    # A copy refused for its id is read again whenever another file changes: its place is found too.
    shutil.copy(third, kb.entries_path / "2026-01-04-copy-000004.md")
    assert len(sync(kb).problems) == 1
    _edit(first, "numbat")
    assert (sync(kb).updated, _looks_are_the_manifest(kb)) == (1, True)
    # A file or a folder deleted is missed by no look.
    (kb.entries_path / "2026-01-04-copy-000004.md").unlink()
    first.unlink()
    assert sync(kb).removed == 1
    shutil.rmtree(kb.entries_path / "2026")
    assert sync(kb).removed == 1
    assert ls() == ["2026-01-03-third-000003"]
    assert _looks_are_the_manifest(kb)
    assert [row[0] for row in _looks(kb)] == [""]


@pytest.mark.usefixtures("any_time_vouches")
def test_without_blob_io_a_changed_folder_is_stored_whole(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    # (Python 3.10 has no sqlite3 blobopen.)
    monkeypatch.setattr(look, "in_place", lambda db: False)
    first = write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    write_entry(kb, "2026-01-02-second-000002", recorded="2026-01-02T00:00:00Z", status="completed")
    sync(kb)
    _edit(first, "wombat")
    assert (sync(kb).updated, _looks_are_the_manifest(kb)) == (1, True)
    assert [row["id"] for row in json_data(run_kb("search", "wombat", "--json").stdout)] == ["2026-01-01-first-000001"]


def test_names_in_no_utf_8_are_left_out_and_named_by_kb_check(kb: KnowledgeBase) -> None:
    # Copied from a system in another encoding: no index, page or JSON can name them (every command stopped).
    first = write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    entries = bytes(kb.entries_path)
    Path(os.fsdecode(entries + b"/caf\xe9")).mkdir()
    shutil.copy(first, os.fsdecode(entries + b"/caf\xe9/2026-01-01-first-000001.md"))
    shutil.copy(first, os.fsdecode(entries + b"/na\xefve.md"))

    def left_out() -> None:
        for command in (["ls", "--json"], ["search", "first", "--json"], ["index"]):
            done = run_kb(*command)
            assert done.returncode == 0, (command, done.stderr)
        assert [row["id"] for row in json_data(run_kb("ls", "--json").stdout)] == ["2026-01-01-first-000001"]
        checked = run_kb("check")
        assert checked.returncode == 1
        assert checked.stdout.splitlines() == [
            f"{kb.entries_path}/caf\\xe9: the name is not UTF-8 text: kb leaves the folder and all in it out until "
            "it is renamed",
            f"{kb.entries_path}/na\\xefve.md: the name is not UTF-8 text: kb leaves the file out until it is renamed",
        ]

    left_out()
    assert [row[0] for row in _looks(kb)] == [""]
    os.unlink(os.fsdecode(entries + b"/na\xefve.md"))
    with watching():
        shutil.copy(first, os.fsdecode(entries + b"/na\xefve.md"))  # seen by the watch's journal
        left_out()
        with open(kb.cache_path / "watch" / "journal", "a") as journal:  # as a kb watch from before journaled it
            journal.write(json.dumps(["p", "na\udcefve.md"]) + "\n")
        left_out()


def test_kb_index_lists_every_folder_even_where_folder_times_do_not_move(kb: KnowledgeBase) -> None:
    # As on some FUSE mounts of object stores: here the time stored is made the folder's time after the change.
    write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    assert run_kb("index").stdout.startswith("Indexed: 1 added")
    write_entry(kb, "2026-01-02-unseen-000002", recorded="2026-01-02T00:00:00Z", status="completed")
    db = connect(index_path(kb.cache_path))
    with db:
        db.execute("UPDATE folder_looks SET ctime_ns = ?", [kb.entries_path.stat().st_ctime_ns])
    db.close()
    assert "2026-01-02-unseen-000002" not in run_kb("ls").stdout
    assert run_kb("index").stdout.startswith("Indexed: 1 added, 0 updated, 0 removed, 1 unchanged")
    assert "2026-01-02-unseen-000002" in run_kb("ls").stdout


def test_a_fresh_folder_time_or_a_link_vouches_for_nothing(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(look, "SETTLED_NS", 10**12)  # (2 s in kb: here longer, then none: the test waits for neither)
    write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    sync(kb)  # the folder was changed a moment ago: its time is not stored
    assert [row[1] for row in _looks(kb)] == [None]
    monkeypatch.setattr(look, "SETTLED_NS", 0)
    time.sleep(0.05)
    sync(kb)  # now it is, once (a write of the looks alone)
    assert [row[1] == kb.entries_path.stat().st_ctime_ns for row in _looks(kb)] == [True]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (kb.entries_path / "linked").symlink_to(elsewhere)
    write_entry(kb, "2026-01-02-far-000002", recorded="2026-01-02T00:00:00Z", status="completed").rename(
        elsewhere / "2026-01-02-far-000002.md"
    )
    time.sleep(0.05)
    assert sync(kb).added == 1
    assert [row[:2] for row in _looks(kb)] == [("", None), ("linked/", elsewhere.stat().st_ctime_ns)]  # (the link)
    assert sorted(ls()) == ["2026-01-01-first-000001", "2026-01-02-far-000002"]


def test_the_looks_stored_are_of_the_files_as_read_when_one_changed_after_the_look(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_entry(kb, "2026-01-01-first-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    second = write_entry(kb, "2026-01-02-second-000002", recorded="2026-01-02T00:00:00Z", status="completed")
    read = parse.read

    def changed_between_the_look_and_the_read(job: parse.Job) -> parse.Read:
        if job[0] == first:
            first.write_text(first.read_text() + "\nwombat\n")
        if job[0] == second:
            second.unlink()
        return read(job)

    monkeypatch.setattr(parse, "read", changed_between_the_look_and_the_read)
    assert sync(kb).added == 1
    monkeypatch.setattr(parse, "read", read)
    db = connect(index_path(kb.cache_path))
    manifest = db.execute("SELECT path, size, mtime_ns, ctime_ns, inode FROM files").fetchall()
    db.close()
    ((_, _, names, _, signatures),) = _looks(kb)
    assert (names.decode(), array("q", signatures).tolist()) == (first.name, list(manifest[0][1:]))
    assert [row[0] for row in manifest] == [first.name]
    report = sync(kb)  # what was read matches the folder now: nothing to look at again
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)


HALVED_SYNC = """
import sys
from kb.index import look
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase

halved = look._halved
calls = []
look._halved = lambda descriptor, names: calls.append(len(names)) or halved(descriptor, names)
look.HALVED_FROM = 10
look.SETTLED_NS = -(10**15)  # every folder's time vouches at once
report = sync(KnowledgeBase.find(sys.argv[1]))
print(calls, report.added, report.updated, report.removed, report.unchanged)
"""


def test_a_big_folder_is_looked_at_by_two_processes_with_the_same_answers(kb: KnowledgeBase) -> None:
    # (In a process of its own: the test runner has threads, and the look halves a folder only in a process without.)
    def halved_sync() -> str:
        return subprocess.run(
            [sys.executable, "-c", HALVED_SYNC, str(kb.root)], capture_output=True, text=True, check=True
        ).stdout.strip()

    paths = [
        write_entry(kb, f"2026-01-01-many-{n:06d}", recorded="2026-01-01T00:00:00Z", status="completed")
        for n in range(41)
    ]
    assert halved_sync() == "[41] 41 0 0 0"
    assert halved_sync() == "[41] 0 0 0 41"
    _edit(paths[3], "quokka")  # first half
    _edit(paths[37], "wombat")  # second half
    assert halved_sync() == "[41] 0 2 0 39"
    paths[30].unlink()
    assert halved_sync() == "[40] 0 0 1 40"
    assert _looks_are_the_manifest(kb)
    found = json_data(run_kb("search", "quokka OR wombat", "--json").stdout)
    assert sorted(row["id"] for row in found) == ["2026-01-01-many-000003", "2026-01-01-many-000037"]


def test_entry_files_that_vanish_during_a_sync_are_gone_not_damage(kb: KnowledgeBase) -> None:
    # A file listed by the walk but deleted or renamed before it is read (a git checkout, an editor saving):
    # the sync counts it as gone, and never reports the index damaged nor rebuilds it.
    for n in range(300):
        write_entry(kb, f"2026-01-01-churn-{n:06d}", recorded="2026-01-01T00:00:00Z", status="completed")
    assert sync(kb).problems == []
    paths = sorted(kb.entries_path.glob("*.md"))
    stop = time.monotonic() + 4

    def churn() -> None:
        while time.monotonic() < stop:
            for path in paths[::7]:
                aside = path.with_name(f"{path.stem}-moved.md")
                path.rename(aside)
                aside.rename(path)

    with ThreadPoolExecutor(1) as pool:
        churning = pool.submit(churn)
        reports = []
        while not churning.done():
            for path in paths[::7]:
                path.touch()  # a changed mtime: read again, so the race is on the read as well as the walk
            reports.append(sync(kb))
        churning.result()
    assert reports and all(report.repaired is None for report in reports), [r.repaired for r in reports]
    final = sync(kb)
    assert final.repaired is None and not final.problems
    db = connect(index_path(kb.cache_path))
    try:
        assert db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == 300
    finally:
        db.close()
    assert fulltext.count(connect(index_path(kb.cache_path))) == 300


def _touch(path: Path, seconds: int) -> None:
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + seconds * 10**9))


@pytest.mark.parametrize("touched_again", [False, True], ids=["then-untouched", "then-touched-again"])
def test_a_touched_file_whose_id_another_file_took_first_gives_it_up(kb: KnowledgeBase, touched_again: bool) -> None:
    # Seen under churn (a file renamed away and back while a sync listed the folder): a new name holding an indexed
    # file's id came first in the sync's order, and the indexed file, touched but unchanged, kept its id too. Two
    # files then held one entry, and when the new name went, the entry went with it while the file stayed: the
    # entry was missing from every answer until its file next changed. So was the entry of a file refused for its
    # id, touched in the sync in which the file holding the id went.
    original = write_entry(kb, "2026-01-01-held-000001", recorded="2026-01-01T10:00:00Z", status="completed")
    assert sync(kb).problems == []
    copy = original.with_name("2026-01-01-held-000001-copy.md")  # before the original in the sync's order
    copy.write_bytes(original.read_bytes())
    _touch(original, 1)
    report = sync(kb)
    assert [(p.path, p.field) for p in report.problems] == [(original, "id")]
    assert f"also used by {copy}" in report.problems[0].message
    copy.unlink()
    if touched_again:
        _touch(original, 2)
    report = sync(kb)
    assert report.problems == [] and (report.added, report.updated, report.removed) == (0, 1, 0)
    db = connect(index_path(kb.cache_path))
    try:
        assert db.execute("SELECT id, path FROM entries").fetchall() == [
            ("2026-01-01-held-000001", "2026-01-01-held-000001.md")
        ]
        assert db.execute("SELECT path, entry_id FROM files").fetchall() == [
            ("2026-01-01-held-000001.md", "2026-01-01-held-000001")
        ]
    finally:
        db.close()


def test_a_link_back_up_the_entries_folder_is_followed_once(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-01-01-looped-000001", recorded="2026-01-01T10:00:00Z", status="completed")
    (kb.entries_path / "2026").mkdir()
    (kb.entries_path / "2026" / "up").symlink_to(kb.entries_path)  # entries/2026/up/2026/up/... without end
    report = sync(kb)
    assert (report.added, report.problems) == (1, [])
    assert [relative for relative, _ in kb.scan()] == ["2026-01-01-looped-000001.md"]


def test_links_that_lead_nowhere_are_neither_entries_nor_folders(kb: KnowledgeBase) -> None:
    # A link in a loop, or through a file, made every command stop (and say the entries folder was a cache that
    # may be deleted): such a link is no file, as a link whose target is gone already was.
    write_entry(kb, "2026-01-01-kept-000001", recorded="2026-01-01T10:00:00Z", status="completed")
    (kb.entries_path / "afile").write_text("not a folder")
    for name, target in [("loop.md", "loop.md"), ("through", "afile/below"), ("through.md", "afile/x.md"),
                         ("gone.md", "nothing.md"), ("loops", "loops")]:  # fmt: skip
        (kb.entries_path / name).symlink_to(target)
    (kb.entries_path / "2026").mkdir()
    (kb.entries_path / "2026" / "loop.md").symlink_to("loop.md")
    commands = (["ls", "--json"], ["search", "kept", "--json"], ["index", "--rebuild"], ["check"], ["migrate"],
                ["show", "loop"], ["show", "2026-01-01-kept"])  # fmt: skip
    for command in commands:
        done = run_kb(*command)
        assert done.returncode == (1 if command[0] == "show" and command[1] == "loop" else 0), (command, done.stderr)
        assert "may be deleted" not in done.stderr and "Traceback" not in done.stderr, (command, done.stderr)
    assert [row["id"] for row in json_data(run_kb("ls", "--json").stdout)] == ["2026-01-01-kept-000001"]
    with watching():
        assert [row["id"] for row in json_data(run_kb("search", "kept", "--json").stdout)] == ["2026-01-01-kept-000001"]


def test_an_entry_file_that_cannot_be_read_is_not_called_a_cache(kb: KnowledgeBase) -> None:
    from kb.index import sync as syncing

    unreadable = kb.entries_path / "2026" / "broken.md"
    with pytest.raises(KbError) as raised, syncing._storage_errors(index_path(kb.cache_path)):
        raise OSError(errno.EIO, "Input/output error", str(unreadable))
    assert str(raised.value) == (
        f"cannot read {unreadable}: Input/output error; fix it or move it out of the entries folder, "
        "then run the command again"
    )


def test_an_index_made_by_an_older_kb_is_upgraded_and_its_whoosh_folder_dropped(sample: KnowledgeBase) -> None:
    """The schema before the full-text table (its words were in Whoosh), with the Whoosh folder beside it."""
    sync(sample)
    path = index_path(sample.cache_path)
    old = sqlite3.connect(path)
    for statement in ("DROP TRIGGER entries_fulltext", "DROP TABLE fulltext_terms", "DROP TABLE fulltext",
                      "DROP TABLE index_format"):  # fmt: skip
        old.execute(statement)
    old.commit()
    assert old.execute("SELECT count(*) FROM files").fetchone()[0] == 5  # every file looks indexed
    old.close()
    whoosh = sample.cache_path / "whoosh"
    whoosh.mkdir()
    (whoosh / "MAIN_1.toc").write_bytes(b"old")
    assert search("unroll") == ["2026-03-01-flex-trn3-000001"]
    assert not whoosh.exists()
    assert fulltext.count(connect(path)) == 5


def _board_tables(kb: KnowledgeBase) -> tuple[list, list]:
    db = connect(index_path(kb.cache_path))
    try:
        # each row but its entry's number, which is the index's own (an edited entry gets a new one)
        rows = [row[1:] for row in db.execute("SELECT * FROM board_rows ORDER BY entry_id")]
        cells = db.execute("SELECT * FROM board_cells ORDER BY workload, backend, mode, category, class").fetchall()
        return rows, cells
    finally:
        db.close()


def test_the_board_tables_follow_each_added_edited_and_deleted_entry(sample: KnowledgeBase) -> None:
    sync(sample)
    rows, cells = _board_tables(sample)
    assert ("2026-03-01-flex-trn3-000001", "failed", "other", "compile_timeout") in [
        (row[0], row[6], row[7], row[8]) for row in rows
    ]
    assert ("flex-attention", "neuron", "compiled", "completed", None, 1) in cells
    failed = sample.entries_path / "2026-03-01-flex-trn3-000001.md"
    failed.write_text(failed.read_text().replace("status: failed", "status: completed"))
    (sample.entries_path / "2026-05-01-llama-h100-000003.md").unlink()
    write_entry(sample, "2026-07-01-flex-trn3-000009", recorded="2026-07-01T10:00:00Z", status="killed",
                backend="neuron", mode="compiled", workload={"name": "flex-attention"})  # fmt: skip
    sync(sample)
    kept, tallied = _board_tables(sample)
    assert ("flex-attention", "neuron", "compiled", "completed", None, 2) in tallied
    assert ("flex-attention", "neuron", "compiled", "other", "killed", 1) in tallied
    assert "2026-05-01-llama-h100-000003" not in [row[0] for row in kept]
    sync(sample, rebuild=True)  # the tables a full index makes from nothing
    assert (kept, tallied) == _board_tables(sample)


def test_an_index_made_before_the_board_tables_gets_them_filled(sample: KnowledgeBase) -> None:
    sync(sample)
    expected = _board_tables(sample)
    path = index_path(sample.cache_path)
    old = sqlite3.connect(path)
    for statement in (
        "DROP TABLE board_rows",
        "DROP TABLE board_cells",
        "DROP TABLE release_rows",
        "DROP TABLE index_format",
    ):
        old.execute(statement)
    old.commit()
    old.close()
    sync(sample)  # built again, not migrated
    assert _board_tables(sample) == expected


def _releases(kb: KnowledgeBase) -> list[dict]:
    from kb.index.answers import releases

    db = connect(index_path(kb.cache_path))
    try:
        return releases(db)
    finally:
        db.close()


def test_the_releases_follow_each_added_edited_and_deleted_release_entry(sample: KnowledgeBase) -> None:
    def release(n: int, version: str) -> Path:
        return write_entry(sample, f"2026-08-0{n}-torch-{n:06d}", kind="release", recorded=f"2026-08-0{n}T00:00:00Z",
                           release={"package": "Torch", "version": version, "date": f"2026-08-0{n}"})  # fmt: skip

    first, second = release(1, "2.10.0"), release(2, "2.11.0")
    sync(sample)
    found = _releases(sample)
    assert [(r["id"], r["package"], r["version"], r["date"]) for r in found] == [
        ("2026-08-01-torch-000001", "torch", "2.10.0", "2026-08-01"),
        ("2026-08-02-torch-000002", "torch", "2.11.0", "2026-08-02"),
    ]
    path = index_path(sample.cache_path)
    old = sqlite3.connect(path)  # an index from before the release rows: built again, with them
    for statement in (
        "DROP TABLE release_rows",
        "CREATE INDEX entries_releases ON entries(recorded, id) WHERE kind = 'release'",
        "DROP TABLE index_format",
    ):
        old.execute(statement)
    old.commit()
    old.close()
    sync(sample)
    assert _releases(sample) == found
    second.write_text(second.read_text().replace("2.11.0", "2.11.1"))
    first.unlink()
    sync(sample)
    assert [(r["id"], r["version"]) for r in _releases(sample)] == [("2026-08-02-torch-000002", "2.11.1")]


NO_INOTIFY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kb watch needs Linux's inotify")


@pytest.mark.parametrize(
    "watched", [pytest.param(False, id="full look"), pytest.param(True, id="kb watch", marks=NO_INOTIFY)]
)
def test_a_copy_refused_for_its_id_is_indexed_once_the_original_goes(kb: KnowledgeBase, watched: bool) -> None:
    # Copying an entry file and deleting the original (a rename done in two steps): the copy was left refused for
    # an id "also used by" a file that no longer existed, and the entry was gone from every answer.
    original = write_entry(kb, "2026-01-01-moved-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    copy = kb.entries_path / "2026-01-02-moved.md"
    with watching() if watched else contextlib.nullcontext():
        assert run_kb("index").returncode == 0
        shutil.copy2(original, copy)
        assert "also used by" in run_kb("check").stdout
        original.unlink()
        listed = run_kb("ls", "--json")
        checked = run_kb("check")
    assert [entry["id"] for entry in json_data(listed.stdout)] == ["2026-01-01-moved-000001"], listed.stderr
    assert checked.returncode == 0 and checked.stdout == "" and "0 problems" in checked.stderr, checked.stdout


@pytest.mark.parametrize("refused", [False, True], ids=["read", "refused-as-too-large"])
def test_a_file_replaced_while_a_sync_reads_it_is_read_again_by_the_next(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, refused: bool
) -> None:
    # An editor or `git checkout` replaces a file by renaming a new one over it. When that happens while a sync reads
    # the old file, the index must keep the old file's size and time with the old text (or the old refusal), so that
    # the next sync sees the change; the new file's, taken after the reading, made every later sync take the old text
    # as current.
    entry_id = "2026-01-01-replaced-000001"
    write_entry(kb, entry_id, "first version", recorded="2026-01-01T00:00:00Z", status="completed")
    sync(kb)
    path = write_entry(kb, entry_id, "second version", recorded="2026-01-01T00:00:00Z", status="completed")
    if refused:
        with path.open("a") as grown:
            grown.write("x" * MAX_ENTRY_BYTES)
    real_fstat, replaced = os.fstat, []

    def fstat(fd: int) -> os.stat_result:  # the sync has the second version open: the third replaces it
        info = real_fstat(fd)
        if not replaced and info.st_ino == path.stat().st_ino:
            replaced.append(path)
            third = write_entry(
                kb, "2026-01-01-replaced-000002", "third version zyzzyva", recorded="2026-01-01T00:00:00Z",
                status="completed",
            )  # fmt: skip
            third.write_text(third.read_text().replace("2026-01-01-replaced-000002", entry_id))
            os.replace(third, path)
        return info

    with monkeypatch.context() as patched:
        patched.setattr(os, "fstat", fstat)
        report = sync(kb)
    assert replaced
    assert (report.updated, report.removed, len(report.problems)) == ((0, 1, 1) if refused else (1, 0, 0))
    report = sync(kb)
    assert (report.added, report.updated) == ((1, 0) if refused else (0, 1))
    assert search("zyzzyva") == [entry_id]
