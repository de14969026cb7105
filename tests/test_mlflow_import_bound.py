"""kb ingest mlflow against a real HTTP tracking server that answers every request, slowly: the time bound holds
for the whole import, not for each request, and the runs read whole before it are kept."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import run_kb

from kb.store.knowledge_base import KnowledgeBase

pytest.importorskip("mlflow", reason="needs kb's mlflow extra (pip install -e '.[mlflow]')")

ANSWER_S = 0.25  # how long the server takes over each answer
STARTED_MS = 1_764_000_000_000
RUNS = {"small": ["loss"], "large": [f"layer{n}.grad_norm" for n in range(60)]}  # metric names of each run


def _run(name: str) -> dict:
    info = {
        "run_id": name,
        "run_uuid": name,
        "run_name": name,
        "experiment_id": "1",
        "status": "FINISHED",
        "start_time": STARTED_MS,
        "end_time": STARTED_MS + 60_000,
        "artifact_uri": f"mlflow-artifacts:/1/{name}/artifacts",
        "lifecycle_stage": "active",
    }
    metrics = [{"key": key, "value": 1.5, "timestamp": STARTED_MS, "step": 3} for key in RUNS[name]]
    return {"info": info, "data": {"metrics": metrics, "params": [], "tags": []}}


class SlowTrackingServer(BaseHTTPRequestHandler):
    """The few REST calls kb makes, each answered after ANSWER_S."""

    answered = 0

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def _answer(self) -> None:
        time.sleep(ANSWER_S)  # the server's own slowness, which the import must bound
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path.endswith("/experiments/search"):
            body: dict = {"experiments": [{"experiment_id": "1", "name": "slow", "lifecycle_stage": "active"}]}
        elif url.path.endswith("/runs/search"):
            body = {"runs": [_run(name) for name in RUNS]}
        elif url.path.endswith("/metrics/get-history"):
            key = query["metric_key"][0]
            body = {"metrics": [{"key": key, "value": 1.5, "timestamp": STARTED_MS, "step": 3}]}
        elif url.path.endswith("/artifacts/list"):
            body = {"files": []}
        else:
            body = {}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        type(self).answered += 1

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowTrackingServer)
    SlowTrackingServer.answered = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_slow_server_answering_many_requests_is_bounded_for_the_whole_import(
    kb: KnowledgeBase, slow_server: str
) -> None:
    every_request = 2 + sum(len(metrics) + 1 for metrics in RUNS.values())  # 64 answers: 16 s
    result = run_kb("ingest", "mlflow", slow_server, "--timeout", "3")
    assert result.returncode == 1
    assert (
        f"kb: {slow_server}: stopped after 3 s, the bound --timeout sets for the whole import, with 1 new run "
        "read; run the same command again to import the rest (runs imported are skipped), or give a longer "
        "--timeout\n" in result.stderr
    ), result.stderr
    assert SlowTrackingServer.answered < every_request / 2  # 3 s of answers: about 12
    (entry,) = kb.iter_entries()  # the run read whole before the bound is kept
    assert entry.data["mlflow"]["run_id"] == "small"
