"""A sync prints nothing itself, however many entries it indexes: the caller passes how progress is shown (the
command line passes kb.terminal.progress.counted)."""

from __future__ import annotations

import pytest
from conftest import write_entry

from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase
from kb.terminal import progress

ENTRIES = progress.MIN_ITEMS + 50  # enough for progress to be shown


def _many(kb: KnowledgeBase) -> None:
    for n in range(ENTRIES):
        write_entry(kb, f"2026-01-01-llama-cuda-{n:06d}", f"llama on cuda {n}", recorded="2026-01-01T00:00:00Z",
                    status="completed", backend="cuda", mode="eager", workload={"name": "llama"})  # fmt: skip


def test_a_library_sync_of_many_entries_prints_nothing(
    kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _many(kb)
    monkeypatch.setattr(progress, "PIPE_EVERY_S", 0.0)  # a progress line for every entry, were any shown
    report = sync(kb)
    assert (report.added, report.problems) == (ENTRIES, [])
    assert capfd.readouterr() == ("", "")


def test_the_progress_passed_in_is_shown(
    kb: KnowledgeBase, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _many(kb)
    monkeypatch.setattr(progress, "PIPE_EVERY_S", 0.0)
    report = sync(kb, progress=progress.counted)
    assert report.added == ENTRIES
    out, err = capfd.readouterr()
    assert out == ""
    assert err.splitlines()[-1].startswith(f"kb: indexing: {ENTRIES:,} of {ENTRIES:,} entries (100%)")
