"""`kb watch`: a real watcher process on real inotify; syncs look only at the files it journals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_kb, watching, write_entry

from kb.index import sync as sync_module
from kb.index import watch
from kb.index.db import connect, index_path
from kb.index.query import Filters, search
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kb watch needs Linux's inotify")


@pytest.fixture
def watcher(kb: KnowledgeBase) -> Iterator[subprocess.Popen]:
    write_entry(kb, "2026-01-01-first-000001", "First", recorded="2026-01-01T10:00:00Z", status="completed")
    with watching() as process:
        yield process


def _found(kb: KnowledgeBase, query: str) -> list[str]:
    db = connect(index_path(kb.cache_path))
    try:
        return sorted(hit.id for hit, _ in search(db, query, Filters()))
    finally:
        db.close()


def _outside_edit(kb: KnowledgeBase, path: Path, word: str, tmp_path: Path) -> None:
    """Change an entry through a hard link in another folder: inotify reports a change to a watched folder's
    file only when it is made through that folder, so the watcher does not see this one, a full look does."""
    link = tmp_path / "elsewhere.md"
    link.unlink(missing_ok=True)
    os.link(path, link)
    with open(link, "a") as handle:
        handle.write(f"\n{word}\n")


def test_edits_additions_renames_and_deletions_are_picked_up(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    first = kb.entries_path / "2026-01-01-first-000001.md"
    first.write_text(first.read_text() + "\nbasilisk\n")
    report = sync(kb)
    assert (report.updated, report.unchanged) == (1, 0), report
    assert _found(kb, "basilisk") == ["2026-01-01-first-000001"]

    (kb.entries_path / "2026").mkdir()  # a new folder, its entries written before the watcher could watch it
    write_entry(kb, "2026-02-01-second-000002", recorded="2026-02-01T10:00:00Z", status="completed", body="chimera")
    (kb.entries_path / "2026-02-01-second-000002.md").rename(kb.entries_path / "2026" / "second.md")
    report = sync(kb)
    assert (report.added, report.unchanged) == (1, 1)
    assert _found(kb, "chimera") == ["2026-02-01-second-000002"]

    (kb.entries_path / "2026" / "second.md").rename(kb.entries_path / "2026" / "renamed.md")
    report = sync(kb)
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    db = connect(index_path(kb.cache_path))
    assert db.execute("SELECT path FROM entries WHERE id = '2026-02-01-second-000002'").fetchone() == (
        "2026/renamed.md",
    )
    db.close()

    (kb.entries_path / "2026" / "renamed.md").unlink()
    (kb.entries_path / "2026").rmdir()
    assert sync(kb).removed == 1
    assert _found(kb, "chimera") == []


def test_a_sync_looks_only_at_what_the_watcher_saw(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    first = kb.entries_path / "2026-01-01-first-000001.md"
    _outside_edit(kb, first, "griffin", tmp_path)
    assert sync(kb).updated == 0  # not journaled, so not looked at: the proof that the sync did not stat it
    assert _found(kb, "griffin") == []
    first.touch()  # any change through the folder is seen
    assert sync(kb).updated == 1
    assert _found(kb, "griffin") == ["2026-01-01-first-000001"]


def test_without_a_live_watcher_every_file_is_looked_at_again(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    first = kb.entries_path / "2026-01-01-first-000001.md"
    watcher.kill()  # SIGKILL: no chance to say goodbye; the kernel drops its lock
    watcher.wait()
    _outside_edit(kb, first, "hippogriff", tmp_path)
    assert sync(kb).updated == 1
    assert _found(kb, "hippogriff") == ["2026-01-01-first-000001"]
    with watching():
        _outside_edit(kb, first, "kraken", tmp_path)  # unseen again, now that a watcher vouches for the folder
        assert sync(kb).updated == 0


def test_a_stopped_watcher_is_not_waited_for_long(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    first = kb.entries_path / "2026-01-01-first-000001.md"
    watcher.send_signal(signal.SIGSTOP)  # alive (its lock held) but not answering the cookie
    try:
        _outside_edit(kb, first, "manticore", tmp_path)
        assert sync(kb).updated == 1  # after the cookie's wait, a full look
    finally:
        watcher.send_signal(signal.SIGCONT)
    assert _found(kb, "manticore") == ["2026-01-01-first-000001"]


def test_a_second_watcher_is_refused_and_ctrl_c_stops_the_first(kb: KnowledgeBase, watcher) -> None:
    second = run_kb("watch", timeout=30)
    assert second.returncode == 1
    assert "another kb watch is already watching" in second.stderr
    watcher.send_signal(signal.SIGINT)
    _, err = watcher.communicate(timeout=30)
    assert "stopped watching; commands check every entry file again" in err
    assert watcher.returncode == 0


def test_commands_see_edits_at_once(kb: KnowledgeBase, watcher) -> None:
    first = kb.entries_path / "2026-01-01-first-000001.md"
    for word in ("phoenix", "roc", "wyvern"):
        first.write_text(first.read_text() + f"\n{word}\n")
        result = run_kb("search", word, "--json")
        assert '"2026-01-01-first-000001"' in result.stdout, result.stderr


def test_the_watcher_stops_when_the_cache_is_deleted(kb: KnowledgeBase, watcher) -> None:
    import shutil

    shutil.rmtree(kb.cache_path)
    _, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 1
    assert "was removed, so kb watch stopped; start it again" in err
    assert sync(kb).added == 1  # and the next command rebuilds from the entries, watcher or not


def test_an_attachment_folder_that_loses_its_entry_counts_as_a_folder_of_entries(kb: KnowledgeBase, watcher) -> None:
    write_entry(kb, "2026-03-01-third-000003", recorded="2026-03-01T10:00:00Z", status="completed")
    folder = kb.entries_path / "2026-03-01-third-000003"
    folder.mkdir()  # its attachment folder: an .md file in it is an attachment, not an entry
    write_entry(kb, "2026-03-02-inner-000004", recorded="2026-03-02T10:00:00Z", status="completed", body="selkie")
    (kb.entries_path / "2026-03-02-inner-000004.md").rename(folder / "inner.md")
    assert sync(kb).added == 1
    assert _found(kb, "selkie") == []
    (kb.entries_path / "2026-03-01-third-000003.md").unlink()  # now a folder like any other: inner.md is an entry
    report = sync(kb)
    assert (report.added, report.removed) == (1, 1)
    assert _found(kb, "selkie") == ["2026-03-02-inner-000004"]
    (folder / "inner.md").write_text((folder / "inner.md").read_text() + "\nkelpie\n")  # and its folder is watched
    assert sync(kb).updated == 1
    assert _found(kb, "kelpie") == ["2026-03-02-inner-000004"]


def test_a_linked_folder_of_entries_is_watched_like_any(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    elsewhere = tmp_path / "team-entries"
    elsewhere.mkdir()
    write_entry(kb, "2026-04-01-linked-000005", recorded="2026-04-01T10:00:00Z", status="completed", body="wendigo")
    (kb.entries_path / "2026-04-01-linked-000005.md").rename(elsewhere / "linked.md")
    (kb.entries_path / "team").symlink_to(elsewhere)
    assert sync(kb).added == 1
    assert _found(kb, "wendigo") == ["2026-04-01-linked-000005"]
    (kb.entries_path / "team").unlink()
    assert sync(kb).removed == 1


def test_the_watcher_stops_when_the_entries_folder_goes(kb: KnowledgeBase, watcher) -> None:
    import shutil

    shutil.rmtree(kb.entries_path)
    _, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 1
    assert "was moved or deleted, so kb watch stopped; start it again" in err
    kb.entries_path.mkdir()
    assert sync(kb).removed == 1  # the new, empty folder is checked in full


def test_a_journal_line_that_does_not_read_means_a_full_look(kb: KnowledgeBase, watcher, tmp_path: Path) -> None:
    sync(kb)  # the stored position is past everything written so far
    first = kb.entries_path / "2026-01-01-first-000001.md"
    _outside_edit(kb, first, "bunyip", tmp_path)  # unseen by the watcher
    with open(kb.cache_path / "watch" / "journal", "a") as journal:
        journal.write('["p", "2026-01-01-fi\n')  # as a write cut short would leave it
    assert sync(kb).updated == 1
    assert _found(kb, "bunyip") == ["2026-01-01-first-000001"]
    _outside_edit(kb, first, "yowie", tmp_path)
    assert sync(kb).updated == 0  # the full look's position was stored: the journal vouches again


def test_a_sync_that_finds_nothing_changed_writes_nothing(
    kb: KnowledgeBase, watcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each sync leaves its cookie in the journal, so the position it read up to moves on every command;
    # storing it took a write transaction per command.
    monkeypatch.setattr(watch, "COOKIE_WAIT_S", 60.0)  # a busy machine's watcher answers late, not never
    sync(kb)
    written = {path.name: path.stat().st_mtime_ns for path in kb.cache_path.glob("index.db*")}
    for _ in range(3):
        assert sync(kb).unchanged == 1
    assert {path.name: path.stat().st_mtime_ns for path in kb.cache_path.glob("index.db*")} == written
    first = kb.entries_path / "2026-01-01-first-000001.md"
    first.write_text(first.read_text() + "\nwendigo\n")
    assert sync(kb).updated == 1
    assert _found(kb, "wendigo") == ["2026-01-01-first-000001"]


def test_a_file_put_back_as_it_was_after_the_watcher_stopped_is_indexed_again(kb: KnowledgeBase, watcher) -> None:
    # The digest of every file's size and time, stored by a sync that looked at every file, no longer tells the
    # manifest once a sync that looked only at the journaled files changed it.
    sync(kb)
    first = kb.entries_path / "2026-01-01-first-000001.md"
    text, before = first.read_text(), first.stat()
    first.write_text(text + "\nmanticore\n")
    assert sync(kb).updated == 1
    watcher.kill()
    watcher.wait()
    first.write_text(text)  # back as it was, to the nanosecond
    os.utime(first, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert first.stat().st_size == before.st_size
    assert sync(kb).updated == 1
    assert _found(kb, "manticore") == []


def test_the_journal_position_is_stored_once_it_falls_far_enough_behind(
    kb: KnowledgeBase, watcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch, "COOKIE_WAIT_S", 60.0)
    sync(kb)
    stored = _position(kb)
    sync(kb)
    assert _position(kb) == stored  # a cookie's line behind: left so
    monkeypatch.setattr(sync_module, "POSITION_SLACK", 1)
    sync(kb)
    assert _position(kb)[1] > stored[1]  # past the slack: stored, so the journal read again stays short


def _position(kb: KnowledgeBase) -> tuple[str, int]:
    db = connect(index_path(kb.cache_path))
    try:
        return db.execute("SELECT token, offset FROM watch_position").fetchone()
    finally:
        db.close()


def _tgkill(pid: int, thread: int, signum: int) -> None:
    """A signal to one thread of another process (Python's own calls reach a process, or a thread of its own)."""
    import ctypes
    import platform

    number = {"x86_64": 234, "aarch64": 131}[platform.machine()]  # SYS_tgkill
    assert ctypes.CDLL(None, use_errno=True).syscall(number, pid, thread, signum) == 0, ctypes.get_errno()


def test_ctrl_c_taken_by_another_thread_still_stops_the_watcher(kb: KnowledgeBase) -> None:
    # A new index makes sqlite-utils load pandas, and with it, where installed, pyarrow and its allocator's thread.
    # The kernel may give a process's signal to any of its threads; Python acts on it in the main thread only.
    with watching() as process:
        threads = sorted(int(name) for name in os.listdir(f"/proc/{process.pid}/task"))
        other = next((thread for thread in threads if thread != process.pid), process.pid)
        _tgkill(process.pid, other, signal.SIGINT)
        _, err = process.communicate(timeout=10)
    assert "stopped watching" in err, err
    assert process.returncode == 0
