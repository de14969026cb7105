"""The parts of `python -m bench.peers` that run in a process of their own: `python -m bench.peers_jobs JOB ARGS`.

Jobs named `mlflow-*` and the MLflow and W&B step loops run in the peers' venv (bench.peers_venv), which has
no kb and no torch; the `kb-*` jobs and the kb and bare step loops run in kb's own venv. Each job prints one
line of JSON last. Imports stay inside the jobs: each venv lacks the other's packages.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The questions of row 4, asked of kb and of MLflow alike.
BACKEND = "neuron"
TORCH_SPEC = ">=2.9"
WORKLOAD = "llama3-70b-infer"
TOP = 10
PHRASE = "out of memory"
TEXT_LIMIT = 1000  # every match at 10,000 entries (about 220): both answers whole, so they can be compared
QUESTIONS = ("failed", "top", "text")
EXPERIMENT = "kb"  # the runs of the knowledge base; client-timed runs go to another experiment
SAMPLE_EXPERIMENT = "client-sample"


def _print(data: Any) -> None:
    print(json.dumps(data), flush=True)


# -- row 1: a step loop that logs one value per step -------------------------------------------------------


def steps(tool: str, count: int, max_s: float) -> dict[str, float]:
    """Seconds per step inside the loop, and the seconds to start and finish the run around it."""
    if tool in ("bare", "kb"):
        return _kb_steps(tool == "kb", count)
    start, log, finish = _peer_logger(tool)
    began = time.perf_counter()
    start()
    started = time.perf_counter()
    done = 0
    value = 1.0  # peers take Python numbers: a loss tensor would need .item() (a device sync) first
    while done < count:
        log(value, done)
        done += 1
        if done % 16 == 0 and time.perf_counter() - started > max_s:
            break  # slow loggers stop at max_s: the per-step figure needs a few hundred steps, not all of them
    looped = time.perf_counter()
    finish()
    ended = time.perf_counter()
    return {"step_s": (looped - started) / done, "steps": done, "start_finish_s": (started - began) + (ended - looped)}


def _kb_steps(instrumented: bool, count: int) -> dict[str, float]:
    import torch

    import ingest.pytorch.instrument  # noqa: F401 - imported here, so that the run's start is not an import
    from bench.instrument import _empty_loop

    torch.set_num_threads(1)
    began = time.perf_counter()
    per_step, _ = _empty_loop(count, instrumented)  # wall seconds a step (beside the thread's CPU seconds)
    total = time.perf_counter() - began
    return {"step_s": per_step, "steps": count, "start_finish_s": max(total - per_step * count, 0.0)}


def _peer_logger(tool: str) -> tuple[Callable[[], None], Callable[[float, int], None], Callable[[], None]]:
    """Start, log and finish for a peer; its store (made beforehand, as a user's is) in the current folder."""
    folder = Path.cwd()
    if tool.startswith("mlflow"):
        import mlflow

        synchronous = tool == "mlflow"

        def start() -> None:
            mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
            mlflow.set_experiment("steps")
            mlflow.start_run()

        def log(value: float, step: int) -> None:
            mlflow.log_metric("loss", value, step=step, synchronous=synchronous)

        return start, log, mlflow.end_run  # end_run waits for the queued metrics of async logging
    if tool == "wandb":
        import wandb

        holder: dict[str, Any] = {}

        def start() -> None:
            holder["run"] = wandb.init(project="steps", dir=folder, mode="offline")

        def log(value: float, step: int) -> None:
            holder["run"].log({"loss": value}, step=step)

        return start, log, lambda: holder["run"].finish()
    raise SystemExit(f"unknown tool {tool!r}")


# -- row 2: kb's environment capture, for a training command in this interpreter ---------------------------


def kb_capture() -> dict[str, int]:
    from ingest.environment import capture

    captured = capture(Path.cwd(), [sys.executable, "train.py"])
    return {"bytes": len(json.dumps(captured)), "versions": len(captured["versions"])}


# -- row 3: an MLflow run that logs what `kb record -- true` records --------------------------------------


def mlflow_record(db: str, payload_path: str) -> dict[str, str]:
    """Start a run, run `true`, log the params, tags, metrics and output kb's entry holds, end the run.
    The values come from a kb entry (payload): MLflow has no capture of its own to gather them with."""
    import mlflow

    payload = json.loads(Path(payload_path).read_text())
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    mlflow.set_experiment("record")
    with mlflow.start_run(run_name="true") as run:
        began = time.time()
        done = subprocess.run(["true"], capture_output=True, text=True, check=False)
        mlflow.log_params(payload["params"])
        mlflow.set_tags({**payload["tags"], "exit_code": str(done.returncode)})
        mlflow.log_metrics({**payload["metrics"], "wall_s": time.time() - began})
        mlflow.log_text(done.stdout + done.stderr, "output.log")
    return {"run_id": run.info.run_id}


# -- row 4: the runs in MLflow's SQLite store, and the questions --------------------------------------------


def mlflow_init(db: str) -> dict[str, int]:
    """An empty store: MLflow makes its tables and runs its migrations on first use (seconds)."""
    from mlflow import MlflowClient

    return {"experiments": len(MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments())}


def mlflow_load(db: str, runs_path: str, sample: int) -> dict[str, float]:
    """Make the store with MLflow (its schema and migrations), insert every run with SQL in one transaction,
    then time `sample` runs through MlflowClient (create_run, log_batch, set_terminated) into another
    experiment of the same store: what adding one run costs at this size."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag

    runs = json.loads(Path(runs_path).read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    experiment = client.create_experiment(EXPERIMENT)
    began = time.perf_counter()
    _insert(db, int(experiment), runs)
    bulk = time.perf_counter() - began

    other = client.create_experiment(SAMPLE_EXPERIMENT)
    times = []
    for run in runs[:sample]:
        began = time.perf_counter()
        made = client.create_run(other, start_time=run["start_ms"], tags={"mlflow.runName": run["id"]})
        client.log_batch(
            made.info.run_id,
            metrics=[Metric(k, v, run["start_ms"], 0) for k, v in run["metrics"].items()],
            params=[Param(k, v) for k, v in run["params"].items()],
            tags=[RunTag(k, v) for k, v in run["tags"].items()],
        )
        client.set_terminated(made.info.run_id, run["status"], end_time=run["end_ms"])
        times.append(time.perf_counter() - began)
    return {"runs": len(runs), "bulk_s": bulk, "client_s_per_run": statistics.median(times) if times else 0.0}


def _insert(db: str, experiment: int, runs: list[dict[str, Any]]) -> None:
    """The rows MlflowClient writes for each run (checked against it by tests/test_bench_peers.py)."""
    connection = sqlite3.connect(db)
    artifacts = str(Path(db).parent / "artifacts")
    run_rows, tag_rows, param_rows, metric_rows, latest_rows = [], [], [], [], []
    for run in runs:
        run_id = uuid.uuid4().hex
        run_rows.append((run_id, run["id"], "UNKNOWN", "", "", run["tags"].get("mlflow.user", ""), run["status"],
                         run["start_ms"], run["end_ms"], "", "active", f"{artifacts}/{run_id}/artifacts",
                         experiment))  # fmt: skip
        tag_rows += [(k, v, run_id) for k, v in {**run["tags"], "mlflow.runName": run["id"]}.items()]
        param_rows += [(k, v, run_id) for k, v in run["params"].items()]
        metric_rows += [(k, v, run["start_ms"], run_id, 0, 0) for k, v in run["metrics"].items()]
        latest_rows += [(k, v, run["start_ms"], 0, 0, run_id) for k, v in run["metrics"].items()]
    with connection:
        connection.executemany(
            "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, status, "
            "start_time, end_time, source_version, lifecycle_stage, artifact_uri, experiment_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            run_rows,
        )
        connection.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?)", tag_rows)
        connection.executemany("INSERT INTO params (key, value, run_uuid) VALUES (?, ?, ?)", param_rows)
        connection.executemany(
            "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)",
            metric_rows,
        )
        connection.executemany(
            "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) VALUES (?, ?, ?, ?, ?, ?)",
            latest_rows,
        )
    connection.close()


def _mlflow_question(client: Any, experiment: str, question: str) -> list[str]:
    """The run names (kb entry ids) that answer a question, as an MLflow user would ask it."""
    if question == "failed":
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion, Version

        runs = _all_runs(client, experiment, f"params.backend = '{BACKEND}' AND attributes.status = 'FAILED'")
        # MLflow compares tags and params as text (2.10 < 2.9): version ranges are checked here, in Python.
        wanted = SpecifierSet(TORCH_SPEC, prereleases=True)
        found = []
        for run in runs:
            try:
                if Version(run.data.tags.get("versions.torch", "")) in wanted:
                    found.append(run.info.run_name)
            except InvalidVersion:
                continue
        return found
    if question == "top":
        runs = client.search_runs(
            [experiment], f"params.workload = '{WORKLOAD}'", order_by=["metrics.tokens_per_s DESC"], max_results=TOP
        )
        return [run.info.run_name for run in runs]
    runs = client.search_runs([experiment], f"tags.`failure.text` ILIKE '%{PHRASE}%'", max_results=TEXT_LIMIT)
    return [run.info.run_name for run in runs]


def _all_runs(client: Any, experiment: str, where: str) -> list[Any]:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment], where, max_results=1000, page_token=token)
        runs += page
        token = page.token
        if not token:
            return runs


def _mlflow_client(db: str) -> tuple[Any, str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    return client, client.get_experiment_by_name(EXPERIMENT).experiment_id


def mlflow_ask(db: str, question: str) -> dict[str, Any]:
    """One question in a fresh process, as a user's script asks it: its answer, printed."""
    client, experiment = _mlflow_client(db)
    return {"ids": _mlflow_question(client, experiment, question)}


def mlflow_ask_warm(db: str, repeats: int) -> dict[str, Any]:
    client, experiment = _mlflow_client(db)
    return _warm(lambda question: _mlflow_question(client, experiment, question), repeats)


def kb_ask_warm(root: str, repeats: int) -> dict[str, Any]:
    """The same questions through kb's library, in one process, after one sync (as each command does first)."""
    from kb.index.db import connect, index_path
    from kb.index.query import Filters, list_entries, search
    from kb.index.sync import sync
    from kb.store.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(Path(root))
    sync(kb)
    db = connect(index_path(kb.cache_path))
    failed = Filters(kind="run", backend=BACKEND, status="failed", packages=[f"torch{TORCH_SPEC}"])

    def ask(question: str) -> list[str]:
        if question == "failed":
            return [row["id"] for row in list_entries(db, failed, limit=None)]
        if question == "top":
            rows = list_entries(db, Filters(kind="run", workload=WORKLOAD), sort="metric.tokens_per_s", limit=TOP)
            return [row["id"] for row in rows]
        return [hit.id for hit, _ in search(db, kb_text_query(), Filters(kind="run"), limit=TEXT_LIMIT)]

    return _warm(ask, repeats)


def kb_text_query() -> str:
    return f'failure:"{PHRASE}"'


def _warm(ask: Callable[[str], list[str]], repeats: int) -> dict[str, Any]:
    """Each question once to warm up (caches, lazily built parsers), then `repeats` timed rounds, alternated."""
    answers = {question: ask(question) for question in QUESTIONS}
    times: dict[str, list[float]] = {question: [] for question in QUESTIONS}
    for _ in range(repeats):
        for question in QUESTIONS:
            began = time.perf_counter()
            ask(question)
            times[question].append(time.perf_counter() - began)
    return {"ids": answers, "seconds": {q: statistics.median(values) for q, values in times.items()}}


def kb_index_bench(root: str, size: int, repeats: int) -> dict[str, float]:
    """bench.index's measurements (build, one edit, searches; grep and FTS5) on a generated knowledge base."""
    from bench import index
    from kb.store.knowledge_base import KnowledgeBase

    return index._measure(KnowledgeBase(Path(root)), size, repeats, 0.0)


JOBS: dict[str, Callable[..., Any]] = {
    "steps": lambda tool, count, max_s: steps(tool, int(count), float(max_s)),
    "kb-capture": kb_capture,
    "mlflow-record": mlflow_record,
    "mlflow-init": mlflow_init,
    "mlflow-load": lambda db, runs, sample: mlflow_load(db, runs, int(sample)),
    "mlflow-ask": mlflow_ask,
    "mlflow-ask-warm": lambda db, repeats: mlflow_ask_warm(db, int(repeats)),
    "kb-ask-warm": lambda root, repeats: kb_ask_warm(root, int(repeats)),
    "kb-index-bench": lambda root, size, repeats: kb_index_bench(root, int(size), int(repeats)),
}


def main() -> None:
    job, *args = sys.argv[1:]
    os.environ.setdefault("WANDB_MODE", "offline")  # never the network, whatever the caller's environment says
    _print(JOBS[job](*args))


if __name__ == "__main__":
    main()
