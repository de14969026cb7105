"""The verdicts' bootstrap intervals are kept in the index: a board judging the same runs again neither resamples
them nor imports scipy (whose import took longer than the rest of a 100,000-entry board), and answers the same."""

from __future__ import annotations

import os
import subprocess

from conftest import KB_COMMAND, json_data, run_kb, write_entry

from kb.index.db import connect, index_path
from kb.store.knowledge_base import KnowledgeBase

# The board in a process of its own, then whether that process imported scipy.stats.
BOARD_THEN_SCIPY = (
    "import sys\n"
    "from kb.cli import main\n"
    "try:\n"
    "    main(['board', '--json'])\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('scipy.stats' in sys.modules)\n"
)


def runs(kb: KnowledgeBase, backend: str, rates: tuple[float, ...], start: int) -> None:
    for n, rate in enumerate(rates, start):
        write_entry(kb, f"2026-11-01-lm-{backend}-{n:04d}", recorded=f"2026-11-01T00:{n:02d}:00Z", backend=backend,
                    mode="eager", workload={"name": "lm"}, status="completed", settings={"batch": 8},
                    versions={"torch": "2.10.0"}, numerics={"verdict": "pass"},
                    metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip


def board_process(kb: KnowledgeBase) -> tuple[dict, bool]:
    done = subprocess.run([*KB_COMMAND[:-2], "-c", BOARD_THEN_SCIPY], capture_output=True, text=True, check=True,
                          env={**os.environ, "KB_HOME": str(kb.root)}, timeout=120)  # fmt: skip
    answer, scipy = done.stdout.rsplit("\n", 2)[:2]
    return json_data(answer, "board"), scipy == "True"


def test_a_board_of_the_same_runs_reads_its_intervals_from_the_index(tmp_path) -> None:
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    runs(kb, "cuda", (1000.0, 1010.0, 990.0, 1005.0), 1)
    runs(kb, "rocm", (1500.0, 1490.0, 1520.0, 1510.0), 11)
    first, first_scipy = board_process(kb)
    (cell,) = [c for c in first["workloads"][0]["cells"] if c["backend"] == "rocm"]
    assert cell["comparison"]["verdict"] == "faster" and cell["comparison"]["low"] is not None
    assert first_scipy  # the interval was computed ...
    db = connect(index_path(kb.cache_path))
    assert db.execute("SELECT count(*) FROM intervals").fetchone()[0] == 1  # ... and kept
    again, again_scipy = board_process(kb)
    assert again == first and not again_scipy
    # Another run changes what is resampled: a new interval, and the board says so.
    runs(kb, "rocm", (900.0,), 20)
    changed = json_data(run_kb("--kb", str(kb.root), "board", "--json").stdout, "board")
    assert changed != first
    assert db.execute("SELECT count(*) FROM intervals").fetchone()[0] == 2


def test_an_index_opened_read_only_answers_the_same_and_keeps_nothing(tmp_path) -> None:
    from kb.answers.board import board
    from kb.index.db import connect_read_only
    from kb.index.sync import sync

    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    runs(kb, "cuda", (1000.0, 1010.0, 990.0, 1005.0), 1)
    runs(kb, "rocm", (1500.0, 1490.0, 1520.0, 1510.0), 11)
    sync(kb)
    read_only = connect_read_only(index_path(kb.cache_path))
    found = board(read_only)
    assert read_only.execute("SELECT count(*) FROM intervals").fetchone()[0] == 0
    assert found == board(connect(index_path(kb.cache_path)))
