"""Every reader prepares the knowledge base the same way: a dead recorder's entry is `killed` wherever it shows."""

from __future__ import annotations

import os
import resource
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.index.db import index_path
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase
from kb.store.orphans import LOOKED

ENTRY_ID = "2026-11-30-doomed-run-000001"


@pytest.fixture
def orphan(kb: KnowledgeBase) -> KnowledgeBase:
    """An entry left `running` by a recorder on this host whose process is gone."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_entry(
        kb, ENTRY_ID, "Doomed run", recorded="2026-11-30T03:00:00Z", status="running",
        recorder={"host": socket.gethostname(), "pid": dead.pid, "started": time.time() - 60},
    )  # fmt: skip
    return kb


def _status(kb: KnowledgeBase) -> str | None:
    return Entry.read(kb.entries_path / f"{ENTRY_ID}.md").status


def test_the_site_publishes_a_dead_recorders_entry_as_killed(orphan: KnowledgeBase) -> None:
    built = run_kb("site", "build")
    assert built.returncode == 0, built.stderr
    assert _status(orphan) == "killed"
    pages = [path for path in (orphan.root / "site").rglob("*.html") if ENTRY_ID in path.read_text()]
    assert pages
    page = next(path for path in pages if ENTRY_ID in str(path))
    assert "killed" in page.read_text() and ">running<" not in page.read_text()
    listed = json_data(run_kb("ls", "--json").stdout)
    assert [(row["id"], row["status"]) for row in listed] == [(ENTRY_ID, "killed")]


def test_kb_index_settles_a_dead_recorders_entry(orphan: KnowledgeBase) -> None:
    assert run_kb("index").returncode == 0
    assert _status(orphan) == "killed"
    found = json_data(run_kb("search", "status:killed", "--json").stdout)
    assert [row["id"] for row in found] == [ENTRY_ID]


def test_kb_show_settles_a_dead_recorders_entry_it_is_asked_for(orphan: KnowledgeBase) -> None:
    shown = run_kb("show", ENTRY_ID, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json_data(shown.stdout)["front_matter"]["status"] == "killed" and _status(orphan) == "killed"


def test_a_library_caller_settles_dead_recorders_entries_only_with_the_settling_it_passes(
    orphan: KnowledgeBase,
) -> None:
    from ingest.killed import settle
    from kb.index.prepare import prepare

    prepare(orphan)  # no settling given: nothing a module imported elsewhere switched on decides it
    assert _status(orphan) == "running"
    prepare(orphan, settle=settle)
    assert _status(orphan) == "killed"
    with sqlite3.connect(index_path(orphan.cache_path)) as db:
        assert db.execute("SELECT status FROM entries").fetchall() == [("killed",)]


def _limited(limit: int) -> Callable[[], None]:
    """A child whose files cannot grow past `limit` bytes: a full disk, as its writes see it (EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_on_a_full_disk_queries_answer_from_the_index_as_it_was(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-11-01-indexed-000001", "Indexed run", recorded="2026-11-01T00:00:00Z", status="completed")
    assert run_kb("index").returncode == 0
    write_entry(kb, "2026-11-02-pending-000002", "Pending run", recorded="2026-11-02T00:00:00Z", status="completed")
    for command in (["ls", "--json"], ["search", "run", "--json"]):
        result = subprocess.run([sys.executable, "-m", "kb", *command], capture_output=True, text=True, timeout=120,
                                preexec_fn=_limited(0))  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert [row["id"] for row in json_data(result.stdout)] == ["2026-11-01-indexed-000001"]
        assert result.stderr.startswith(f"kb: warning: cannot update {kb.cache_path}")
        assert result.stderr.endswith("answering from the index as it was: it may be stale\n")
        assert result.stderr.count("\n") == 1
    indexing = subprocess.run([sys.executable, "-m", "kb", "index"], capture_output=True, text=True, timeout=120,
                              preexec_fn=_limited(0))  # fmt: skip
    assert indexing.returncode == 1 and "free some disk space" in indexing.stderr  # kb index is asked to update
    listed = json_data(run_kb("ls", "--json").stdout)
    assert [row["id"] for row in listed] == ["2026-11-02-pending-000002", "2026-11-01-indexed-000001"]


@pytest.mark.parametrize("left", ["unfinished", "damaged"])
def test_on_a_full_disk_the_index_a_killed_build_left_is_not_answered_from(kb: KnowledgeBase, left: str) -> None:
    # A build killed midway leaves a file without its schema version, written in part (without a journal) and often
    # damaged: answering from it gave a partial answer (it was read as stale), or a traceback (damaged).
    write_entry(kb, "2026-11-01-indexed-000001", "Indexed run", recorded="2026-11-01T00:00:00Z", status="completed")
    assert run_kb("index").returncode == 0
    index = index_path(kb.cache_path)
    db = sqlite3.connect(index)
    db.execute("DELETE FROM index_format")  # the mark only a finished build leaves
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    if left == "damaged":  # every page but the first (the schema) overwritten
        with open(index, "r+b") as handle:
            handle.seek(page_size)
            handle.write(b"\xff" * (index.stat().st_size - page_size))
    result = subprocess.run([sys.executable, "-m", "kb", "ls", "--json"], capture_output=True, text=True, timeout=120,
                            preexec_fn=_limited(0))  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith(f"kb: error: cannot update {kb.cache_path}") and result.stderr.count("\n") == 1
    assert "free some disk space" in result.stderr
    listed = run_kb("ls", "--json")  # space again: the index is built anew
    assert [row["id"] for row in json_data(listed.stdout)] == ["2026-11-01-indexed-000001"]


def _dead_writers_temporary(kb: KnowledgeBase) -> Path:
    """What a `kb record` killed in the middle of writing its new entry leaves: a temporary file, cut short."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = kb.entries_path / f".2026-11-30-cut-short-000002.md.{dead.pid}.0badf00d.tmp"
    path.write_text("---\nid: 2026-11-30-cut-sh")
    return path


def test_a_dead_writers_temporary_file_is_removed_whenever_the_entries_folder_changed(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-11-01-indexed-000001", "Indexed run", recorded="2026-11-01T00:00:00Z", status="completed")
    settled = time.time_ns() - 3600 * 10**9
    os.utime(kb.entries_path, ns=(settled, settled))  # unchanged for an hour
    assert run_kb("ls").returncode == 0
    assert (kb.cache_path / LOOKED).read_text() == f"{settled}\n"  # found without temporary files then
    left = _dead_writers_temporary(kb)  # which changes the folder's time
    assert run_kb("ls").returncode == 0
    assert not left.exists()


def test_an_unchanged_entries_folder_is_not_listed_again(kb: KnowledgeBase) -> None:
    settled = time.time_ns() - 3600 * 10**9
    os.utime(kb.entries_path, ns=(settled, settled))
    assert run_kb("ls").returncode == 0
    left = _dead_writers_temporary(kb)
    os.utime(kb.entries_path, ns=(settled, settled))  # as if the folder had not changed: kb does not look
    assert run_kb("ls").returncode == 0
    assert left.exists()
    os.utime(kb.entries_path)  # now it has
    assert run_kb("ls").returncode == 0
    assert not left.exists()


def test_a_recently_changed_entries_folder_is_listed_by_every_command(kb: KnowledgeBase) -> None:
    # Within the same tick of the clock a new file may leave the folder's time as it was: no mark is kept.
    write_entry(kb, "2026-11-01-indexed-000001", "Indexed run", recorded="2026-11-01T00:00:00Z", status="completed")
    # Changed as the command starts, however long a busy machine takes to start it: a time not well before then.
    moments_ago = time.time_ns() + 60 * 10**9
    os.utime(kb.entries_path, ns=(moments_ago, moments_ago))
    assert run_kb("ls").returncode == 0
    assert not (kb.cache_path / LOOKED).exists()


def test_a_folder_that_could_not_be_listed_is_listed_again(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    # Out of file descriptors, say: nothing was found because nothing was looked at.
    from kb.store import atomic, orphans

    settled = time.time_ns() - 3600 * 10**9
    left = _dead_writers_temporary(kb)
    os.utime(kb.entries_path, ns=(settled, settled))
    kb.ensure_cache()

    def out_of_descriptors(folder: object) -> list[str]:
        raise OSError(24, "Too many open files")

    with monkeypatch.context() as failing:
        failing.setattr(atomic.os, "listdir", out_of_descriptors)
        orphans.remove_unpublished(kb)
    assert left.exists() and not (kb.cache_path / LOOKED).exists()
    orphans.remove_unpublished(kb)
    assert not left.exists()


def test_settling_removes_what_dead_writers_left_in_the_attachments(orphan: KnowledgeBase) -> None:
    # A rank killed while it rewrote its summary, or a kb command killed while it settled this entry, left a
    # temporary file deep in the entry's folder; a writer still running keeps its own.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ranks = orphan.attachments_path(ENTRY_ID) / "run" / "ranks"
    ranks.mkdir(parents=True)
    left, kept = ranks / f".rank-1.json.{dead.pid}.0badf00d.tmp", ranks / f".rank-0.json.{os.getpid()}.0badf00d.tmp"
    for path in (left, kept):
        path.write_text("{")
    assert run_kb("ls").returncode == 0
    assert _status(orphan) == "killed"
    assert not left.exists() and kept.exists()
