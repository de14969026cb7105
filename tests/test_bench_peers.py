"""bench.peers on tiny sizes: timed processes report what they used, MLflow holds the runs as its own client
writes them, kb and MLflow answer the questions alike, and each step loop really logs."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import peers, peers_scale, peers_venv
from bench.peers_venv import job, measure, new_store


@pytest.fixture(scope="module")
def peers_python() -> Path:
    """The peers' venv, made on first use (MLflow, W&B: a minute or two, once per machine, as `make bench-peers`)."""
    return peers_venv.ensure()


needs_peers = pytest.mark.usefixtures("peers_python")


def test_measure_reports_peak_memory_and_output() -> None:
    grow = "import sys; block = bytearray(200 * 1024 * 1024); block[::4096] = b'x' * len(block[::4096]); print('done')"
    sample = measure([sys.executable, "-c", grow], environ=peers_venv.env(), timeout=60)
    assert sample.out == "done\n"
    assert sample.peak_mb >= 200


def test_measure_kills_a_command_at_its_timeout() -> None:
    with pytest.raises(RuntimeError, match="timed out"):
        measure([sys.executable, "-c", "import time; time.sleep(60)"], environ=peers_venv.env(), timeout=1)


def test_growth_exponent_is_the_log_log_slope() -> None:
    assert peers.slope([1_000, 10_000], [2.0, 20.0]) == pytest.approx(1.0)
    assert peers.slope([1_000, 10_000, 100_000], [3.0, 3.0, 3.0]) == pytest.approx(0.0)
    assert peers.slope([100, 1_000, 10_000], [1.0, 100.0, 10_000.0]) == pytest.approx(2.0)


def test_table_shows_ratios_and_keeps_rows_in_order() -> None:
    lines = [
        peers.Line("5 · 10,000", "site", 2.0, "MkDocs", 1.0, "s"),
        peers.Line("4 · 1,000", "query", 1.0, "MLflow", 250.0, "ms"),
        peers.Line("1", "step", 2.5, "W&B", 1000.0, "µs/step"),
    ]
    table = peers.render(sorted(lines, key=peers.Line.order), [], (), "header")
    rows = table.splitlines()[4:]
    assert [row.split(" | ")[0] for row in rows] == ["| 1", "| 4 · 1,000", "| 5 · 10,000"]
    assert "| 2.5 µs (0.05%) | W&B | 1,000 µs (20%) | 1/400 |" in rows[0]
    assert "| 2 |" in rows[2]


# -- with the peers' venv ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(peers_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """300 generated entries, indexed; their runs in an MLflow store: all by SQL, the first 8 also through
    MlflowClient into a second experiment of the same store."""
    from bench.generate import generate
    from kb.index.sync import sync

    folder = tmp_path_factory.mktemp("peers")
    kb = generate(folder / "kb", 300, seed=1)
    sync(kb)
    runs = folder / "runs.json"
    runs.write_text(json.dumps(peers_scale.mlflow_runs(kb)))
    db = new_store(peers_venv.python(), folder / "mlflow.db")
    load = job(peers_venv.python(), "mlflow-load", db, runs, 8, cwd=folder, timeout=300).json()
    return {"kb": kb, "db": db, "folder": folder, "load": load}


def _rows(db: Path, experiment: str) -> dict[str, tuple]:
    """Every run of an experiment by name, with what MLflow holds for it (ids and paths left out)."""
    connection = sqlite3.connect(db)
    runs = connection.execute(
        "SELECT r.run_uuid, r.name, r.status, r.start_time, r.end_time, r.lifecycle_stage FROM runs r "
        "JOIN experiments e ON e.experiment_id = r.experiment_id WHERE e.name = ?",
        [experiment],
    ).fetchall()

    def rows(table: str, columns: str, run_id: str) -> list[tuple]:
        return sorted(connection.execute(f"SELECT {columns} FROM {table} WHERE run_uuid = ?", [run_id]))

    held = {
        name: (status, start, end, stage, rows("tags", "key, value", run_id), rows("params", "key, value", run_id),
               rows("metrics", "key, value, timestamp, step, is_nan", run_id),
               rows("latest_metrics", "key, value, timestamp, step, is_nan", run_id))
        for run_id, name, status, start, end, stage in runs
    }  # fmt: skip
    connection.close()
    return held


@needs_peers
def test_bulk_insert_writes_what_mlflows_client_writes(loaded: dict[str, Any]) -> None:
    bulk = _rows(loaded["db"], "kb")
    client = _rows(loaded["db"], "client-sample")
    assert len(bulk) == loaded["load"]["runs"] == len(json.loads((loaded["folder"] / "runs.json").read_text()))
    assert len(client) == 8
    for name, held in client.items():
        assert bulk[name] == held, name


@needs_peers
def test_kb_and_mlflow_give_the_same_answers(loaded: dict[str, Any]) -> None:
    kb_answers = job(sys.executable, "kb-ask-warm", loaded["kb"].root, 1, timeout=120).json()["ids"]
    mlflow_answers = job(peers_venv.python(), "mlflow-ask-warm", loaded["db"], 1, timeout=120).json()["ids"]
    for question in ("failed", "top", "text"):
        assert kb_answers[question], question  # each question finds runs at this size: the comparison means something
        assert sorted(kb_answers[question]) == sorted(mlflow_answers[question]), question
    assert kb_answers["top"] == mlflow_answers["top"]  # the same order, too


@needs_peers
@pytest.mark.parametrize("tool", ["mlflow", "wandb"])
def test_each_peer_step_loop_logs_every_step(tool: str, tmp_path: Path) -> None:
    """The peers' loops write what they are timed for (kb's loop is bench.instrument's, run by `python -m bench`)."""
    if tool == "mlflow":
        new_store(peers_venv.python(), tmp_path / "mlflow.db")
    result = job(peers_venv.python(), "steps", tool, 40, 60, cwd=tmp_path, timeout=180).json()
    assert result["steps"] == 40
    if tool == "mlflow":
        db = sqlite3.connect(tmp_path / "mlflow.db")
        assert db.execute("SELECT count(*), max(step) FROM metrics WHERE key = 'loss'").fetchone() == (40, 39)
        db.close()
    else:
        assert len(list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))) == 1
