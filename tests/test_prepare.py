"""Every reader prepares the knowledge base the same way: a dead recorder's entry is `killed` wherever it shows."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from conftest import run_kb, write_entry

from kb.entry import Entry
from kb.store import KnowledgeBase

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
    listed = json.loads(run_kb("ls", "--json").stdout)
    assert [(row["id"], row["status"]) for row in listed] == [(ENTRY_ID, "killed")]


def test_kb_index_settles_a_dead_recorders_entry(orphan: KnowledgeBase) -> None:
    assert run_kb("index").returncode == 0
    assert _status(orphan) == "killed"
    found = json.loads(run_kb("search", "status:killed", "--json").stdout)
    assert [row["id"] for row in found] == [ENTRY_ID]
