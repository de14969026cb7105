"""The index is a projection of the entries: an index of another format (an older kb's, which migrated its schema)
is built again from the entries, never migrated, and answers as a new one does."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from conftest import REPO, json_data, run_kb, write_entry

from kb.index import schema
from kb.index.db import index_path
from kb.store.knowledge_base import KnowledgeBase

# Made by a kb from before the formats (index migrations m001 to m010) from the entries `_entries` writes.
OLDER_INDEX = REPO / "tests" / "data" / "older-index.db.gz"
ASKED = (("ls", "--json"), ("search", "unroll", "--json"), ("board", "--json"), ("check",))


def _entries(kb: KnowledgeBase) -> None:
    for i, (backend, rate) in enumerate((("cuda", 1000.0), ("rocm", 800.0), ("cuda", 1100.0)), start=1):
        write_entry(kb, f"2026-01-0{i}-llama-{backend}-00000{i}", f"llama on {backend}",
                    body="The loop would not unroll.", recorded=f"2026-01-0{i}T00:00:00Z", status="completed",
                    backend=backend, mode="eager", workload={"name": "llama"}, versions={"torch": f"2.1{i}.0"},
                    tags=["nightly"], metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}


def test_an_index_made_by_an_older_kb_is_rebuilt_not_migrated_and_answers_the_same(kb: KnowledgeBase) -> None:
    _entries(kb)
    assert run_kb("index").returncode == 0
    answers = [run_kb(*args).stdout for args in ASKED]
    path = index_path(kb.cache_path)
    shutil.rmtree(kb.cache_path)
    kb.cache_path.mkdir()
    with gzip.open(OLDER_INDEX) as older, open(path, "wb") as copy:
        shutil.copyfileobj(older, copy)
    assert {"_sqlite_migrations", "files_digest", "board_entry_added"} <= _tables(path)  # as that kb left it
    assert [run_kb(*args).stdout for args in ASKED] == answers
    kept = _tables(path)
    assert not {"_sqlite_migrations", "files_digest", "board_entry_added"} & kept  # nothing of the older schema
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT format FROM index_format").fetchall() == [(schema.FORMAT,)]
    assert [row["id"] for row in json_data(run_kb("ls", "--json").stdout)] == [
        "2026-01-03-llama-cuda-000003",
        "2026-01-02-llama-rocm-000002",
        "2026-01-01-llama-cuda-000001",
    ]


def test_a_changed_format_is_told_by_the_format_stored_alone(kb: KnowledgeBase) -> None:
    """The schema, what a row holds (kb.index.rows.ROWS_VERSION) and the entry schema all make the format."""
    _entries(kb)
    assert run_kb("index").returncode == 0
    path = index_path(kb.cache_path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE index_format SET format = 'another'")
        db.execute("UPDATE entries SET title = 'as another kb read it'")
    assert run_kb("index").stdout.startswith("Indexed: 3 added")
    assert "as another kb read it" not in run_kb("ls").stdout
    assert len(schema.FORMAT) == 16 and all(statement for statement in schema.statements())
