"""Everything a person would type finds its run: setting values, the command and script, compile evidence, the
failure class as words, package names; and the --setting filter of kb ls and kb search."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.index.db import connect, index_path
from kb.index.query import Filters, search
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase

LSTM = "2026-11-30-lstm-word-language-model-000001"
OTHER = "2026-11-29-mlp-000002"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KnowledgeBase, sqlite3.Connection]]:
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("findable") / "kb")
    write_entry(
        kb, LSTM, "word language model", recorded="2026-11-30T03:00:00Z", status="failed", backend="cuda",
        mode="compiled", settings={"model": "LSTM", "batch": 20, "tied": True},
        command={"argv": ["python", "examples/word_language_model/main.py", "--model", "LSTM"]},
        versions={"torch": "2.13.0", "torch-neuronx": "2.13.3.0"},
        failure={"class": "oom", "message": "CUDA error: an illegal memory access... CUDA OOM"},
        compile={
            "graph_breaks": {"count": 2, "reasons": [{"reason": "Unsupported: call_function BuiltinVariable(print)",
                                                      "count": 2, "at": "main.py:80"}]},
            "recompiles": {"count": 1, "reasons": ["forward: tensor 'hidden' size mismatch at index 0"]},
        },
    )  # fmt: skip
    write_entry(
        kb, OTHER, "mlp", recorded="2026-11-29T03:00:00Z", status="completed", backend="cpu", mode="eager",
        settings={"model": "MLP", "batch": 8}, command={"argv": ["python", "train.py"]},
        compile={"graph_breaks": {"count": 0, "reasons": []}, "recompiles": {"count": 0, "reasons": []}},
    )  # fmt: skip
    sync(kb)
    db = connect(index_path(kb.cache_path))
    yield kb, db
    db.close()


def found(db: sqlite3.Connection, query: str, **filters: object) -> list[str]:
    return [hit.id for hit, _ in search(db, query, Filters(**filters))]


@pytest.mark.parametrize(
    "query",
    ["lstm", "main.py", "main", "graph break", '"graph break"', "recompile", "dynamo", '"out of memory"', "oom",
     "neuronx", "torch-neuronx", "BuiltinVariable", "hidden size mismatch", "command:main.py", "compile:recompile"],
)  # fmt: skip
def test_what_a_person_types_finds_the_run(indexed: tuple[KnowledgeBase, sqlite3.Connection], query: str) -> None:
    assert found(indexed[1], query) == [LSTM]


def test_no_graph_break_is_no_match(indexed: tuple[KnowledgeBase, sqlite3.Connection]) -> None:
    assert found(indexed[1], "train.py") == [OTHER]
    assert OTHER not in found(indexed[1], "break OR recompile OR dynamo")


def test_setting_filters(indexed: tuple[KnowledgeBase, sqlite3.Connection]) -> None:
    db = indexed[1]
    assert found(db, "model", settings=["model=lstm"]) == [LSTM]  # text in any case
    assert found(db, "model", settings=["batch=8"]) == [OTHER]  # a number as a number
    assert found(db, "model", settings=["batch=20.0", "tied=true"]) == [LSTM]
    assert found(db, "model", settings=["batch=8", "model=LSTM"]) == []  # all must match


def test_setting_option_on_ls_and_search(indexed: tuple[KnowledgeBase, sqlite3.Connection]) -> None:
    env = {"KB_HOME": str(indexed[0].root)}
    listed = run_kb("ls", "--setting", "batch=8", "--json", env=env)
    assert [row["id"] for row in json_data(listed.stdout)] == [OTHER]
    searched = run_kb("search", "model", "--setting", "model=LSTM", "--json", env=env)
    assert [row["id"] for row in json_data(searched.stdout)] == [LSTM]
    bad = run_kb("ls", "--setting", "batch", env=env)
    assert bad.returncode == 1
    assert bad.stderr == "kb: error: --setting 'batch': expected NAME=VALUE, e.g. --setting batch=8 or model=LSTM\n"


def test_a_recorded_script_is_found_by_its_name(kb: KnowledgeBase, tmp_path: Path) -> None:
    script = tmp_path / "finetune_lstm.py"
    script.write_text("print('epoch 1 done')\n")
    assert run_kb("record", "--setting", "model=LSTM", "--", sys.executable, str(script)).returncode == 0
    hits = json_data(run_kb("search", "finetune_lstm.py", "--json").stdout)
    assert [row["title"] for row in hits] and len(hits) == 1
    assert len(json_data(run_kb("ls", "--setting", "model=LSTM", "--json").stdout)) == 1
