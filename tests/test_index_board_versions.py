"""The versions the board reads a cell's release from (board_versions) go with their entry through every sync: an
entry edited to a newer release, and one deleted, move the cell's current state as its runs do."""

from __future__ import annotations

from conftest import write_entry

from kb.answers.board import board
from kb.index.db import connect, index_path
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase


def run(kb: KnowledgeBase, n: int, neuronx: str, rate: float) -> str:
    entry_id = f"2026-11-01-lm-neuron-{n:04d}"
    write_entry(kb, entry_id, recorded=f"2026-11-01T00:{n:02d}:00Z", backend="neuron", mode="compiled",
                workload={"name": "lm"}, status="completed", settings={"batch": 8}, numerics={"verdict": "pass"},
                versions={"torch": "2.10.0", "torch_neuronx": neuronx},
                metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    return entry_id


def cell(kb: KnowledgeBase) -> dict:
    sync(kb)
    (found,) = board(connect(index_path(kb.cache_path))).workloads[0].cells
    return {"release": found.release, "n": found.n, "figure": found.figure.value if found.figure else None}


def test_a_cell_follows_its_runs_releases_through_edits_and_deletions(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    for n, rate in enumerate((1000.0, 1010.0, 990.0), 1):
        run(kb, n, "2.26.0", rate)
    newest = run(kb, 4, "2.26.0+b7", 2000.0)  # a local build of the same release: one release
    assert cell(kb) == {"release": "torch-neuronx 2.26.0", "n": 4, "figure": 1005.0}
    run(kb, 4, "2.27.1", 2000.0)  # the same entry, rewritten on a newer release: the only run of the current state
    assert cell(kb) == {"release": "torch-neuronx 2.27.1", "n": 1, "figure": 2000.0}
    db = connect(index_path(kb.cache_path))
    assert db.execute("SELECT version FROM board_versions WHERE entry_id = ?", [newest]).fetchall() == [("2.27.1",)]
    (kb.entries_path / f"{newest}.md").unlink()
    assert cell(kb) == {"release": "torch-neuronx 2.26.0", "n": 3, "figure": 1000.0}
    assert db.execute("SELECT count(*) FROM board_versions WHERE entry_id = ?", [newest]).fetchone() == (0,)
