"""A sync that waits for another process's lock on the index tells its caller, and prints nothing itself: the
library reports, the command line says it."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path

import pytest
from conftest import write_entry

from kb.index import sync as index_sync
from kb.store.knowledge_base import KnowledgeBase


def test_a_sync_waiting_for_the_lock_tells_its_caller_and_prints_nothing(
    kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_entry(kb, "2026-01-01-llama-cuda-000001", "llama on cuda", recorded="2026-01-01T00:00:00Z",
                status="completed", backend="cuda", mode="eager", workload={"name": "llama"})  # fmt: skip
    monkeypatch.setattr(index_sync, "LOCK_NOTICE_S", 0.0)
    told: list[Path] = []
    waited = threading.Event()

    def waiting(lock: Path) -> None:
        told.append(lock)
        waited.set()

    lock = kb.ensure_cache() / index_sync.LOCK_NAME
    reports: list[index_sync.SyncReport] = []
    with open(lock, "a") as holder:  # another open file: flock holds it against this process's sync too
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        syncing = threading.Thread(target=lambda: reports.append(index_sync.sync(kb, waiting=waiting)))
        syncing.start()
        assert waited.wait(timeout=60), "the sync never said it was waiting"
        assert not reports  # still waiting for the lock
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
    syncing.join(timeout=60)
    assert [(report.added, report.problems) for report in reports] == [(1, [])]
    assert told == [lock]  # once
    assert capfd.readouterr() == ("", "")


def test_the_command_line_says_that_it_waits(kb: KnowledgeBase, capfd: pytest.CaptureFixture[str]) -> None:
    from kb.commands.common import waiting_note

    waiting_note(Path("/kb/.kb/index.lock"))
    said = "kb: waiting for another kb process that is updating the index (/kb/.kb/index.lock)\n"
    assert capfd.readouterr().err == said
