"""`kb compare --workload --by`: sound comparisons over a knowledge base with the traps real variety brings.

A failed or killed group sorted first, an interrupted run newer than the finished one (a real Ctrl-C of
`kb record`), one backend only, several backends for --by mode, 1 vs 64 devices, `+cuXXX` local labels,
cold beside warm compiles, derived throughput beside noisy step times, and every difference that changes
a result (git commit and dirty tree, tags, step counts).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

ONCE = "inconclusive (n=1 vs 1, floor 2%; too few runs: 3 on each side give an interval)"  # one run a side

EMIT = (
    "import json, os, sys, time\n"
    "def emit(**event):\n"
    "    open(os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl'), 'a').write(json.dumps(event) + '\\n')\n"
    "emit(event='set', field='timings.step_s', value={'median': 0.02, 'p10': 0.019, 'p90': 0.021, 'count': 9})\n"
    "emit(event='metric', name='tokens_per_s', value=float(sys.argv[1]), unit='tokens/s')\n"
    "emit(event='metric', name='tokens_per_s_median_step', value=float(sys.argv[1]), unit='tokens/s')\n"
    "open(sys.argv[2], 'w').close()\n"
    "time.sleep(float(sys.argv[3]))\n"
)


def record(mode: str, rate: float, ready: Path, sleep: float = 0.0) -> subprocess.Popen:
    argv = [sys.executable, "-m", "kb", "record", "--workload", "lm", "--backend", "cpu", "--mode", mode,
            "--", sys.executable, "-c", EMIT, str(rate), str(ready), str(sleep)]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(kb: KnowledgeBase, entry_id: str, **fields) -> None:
    fields.setdefault("status", "completed")
    fields.setdefault("workload", {"name": "qwen"})
    fields.setdefault("mode", "compiled")
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", **fields)


def compared(*args: str) -> dict:
    result = run_kb("compare", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def rows(comparison: dict) -> dict[str, dict]:
    return {row["name"]: row for row in comparison["rows"]}


def test_an_interrupted_run_is_never_the_one_compared(kb: KnowledgeBase, tmp_path: Path) -> None:
    finished = record("eager", 4000.0, tmp_path / "a")
    assert finished.wait(60) == 0
    compiled = record("compiled", 6000.0, tmp_path / "b")
    assert compiled.wait(60) == 0
    stopped = record("eager", 1.0, tmp_path / "c", sleep=60)
    deadline = time.monotonic() + 60
    while not (tmp_path / "c").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped.send_signal(signal.SIGINT)  # Ctrl-C of kb record: the newest eager run is interrupted
    stopped.wait(60)
    statuses = sorted(row["status"] for row in json_data(run_kb("ls", "--json").stdout))
    assert statuses == ["completed", "completed", "interrupted"]
    comparison = compared("--workload", "lm", "--by", "mode")
    assert [e["status"] for e in comparison["entries"]] == ["completed", "completed"]
    assert [e["label"].split(" · ")[:2] for e in comparison["entries"]] == [["cpu", "eager"], ["cpu", "compiled"]]
    assert rows(comparison)["tokens_per_s"]["values"] == [4000.0, 6000.0]
    # One completed run a side (the interrupted one is no repeat): no verdict, whatever the figures.
    assert comparison["runs"] == [1, 1]
    assert rows(comparison)["tokens_per_s"]["verdicts"][1] == ONCE
    one = run_kb("compare", "--workload", "lm", "--by", "backend")
    assert one.returncode == 1 and one.stderr == "kb: error: only cpu so far; try --by mode\n"
    assert compared("--workload", "lm", "--by", "mode", "--status", "completed")["entries"][0]["status"] == "completed"
    refused = run_kb("compare", "--workload", "lm", "--by", "mode", "--baseline", "2026")
    assert refused.returncode == 1


@pytest.fixture
def variety(kb: KnowledgeBase) -> KnowledgeBase:
    one = {"accelerators": [{"name": "h100", "count": 1}]}
    run(kb, "2026-11-01-qwen-cuda-000001", backend="cuda", hardware=one, versions={"torch": "2.10.0+cu126"},
        metrics={"tokens_per_s": {"value": 5000.0, "unit": "tokens/s"}}, timings={"compile_s": 60.0},
        tags=["cold"], git={"commit": "aaaa", "dirty": False})  # fmt: skip
    run(kb, "2026-11-02-qwen-cuda-000002", backend="cuda", hardware=one, versions={"torch": "2.10.0+cu128"},
        metrics={"tokens_per_s": {"value": 5100.0, "unit": "tokens/s"}}, timings={"compile_s": 6.0},
        tags=["warm"], git={"commit": "aaaa", "dirty": True})  # fmt: skip
    run(kb, "2026-11-03-qwen-neuron-000003", backend="neuron", versions={"torch": "2.11.0"},
        hardware={"accelerators": [{"name": "trainium2", "count": 64}]},
        metrics={"tokens_per_s": {"value": 640000.0, "unit": "tokens/s"}})  # fmt: skip
    # Sorted first, and newest of all: a killed run and a failed one.
    run(kb, "2026-11-04-qwen-aaa-000004", backend="aaa", status="killed")
    run(kb, "2026-11-05-qwen-aaa-000005", backend="aaa", status="failed", timings={"wall_s": 1.0})
    run(kb, "2026-11-06-qwen-cuda-000006", backend="cuda", mode="eager", status="running")
    return kb


def test_a_failed_group_is_never_the_baseline_and_figures_go_per_device(variety: KnowledgeBase) -> None:
    result = run_kb("compare", "--workload", "qwen", "--by", "backend", "--json")
    comparison = json_data(result.stdout)
    ids = [e["id"] for e in comparison["entries"]]
    assert ids == ["2026-11-02-qwen-cuda-000002", "2026-11-03-qwen-neuron-000003"]  # cuda: the most runs
    assert comparison["notes"][-1] == "aaa: no usable run (1 failed, 1 killed)"
    assert comparison["entries"][1]["label"] == "neuron · compiled · 64x trainium2"
    rate = rows(comparison)["tokens_per_s"]
    assert rate["unit"] == "tokens/s per device" and rate["values"] == [5100.0, 10000.0]
    assert "devices 1 → 64 (throughput compared per device)" in comparison["differences"]
    against = compared("--workload", "qwen", "--by", "backend", "--baseline", "2026-11-03-qwen-neuron-000003")
    assert against["entries"][0]["id"] == "2026-11-03-qwen-neuron-000003"
    failed = run_kb("compare", "--workload", "qwen", "--by", "backend", "--baseline", "2026-11-05-qwen-aaa-000005")
    assert failed.returncode == 1
    assert failed.stderr == (
        "kb: error: --baseline 2026-11-05-qwen-aaa-000005: a failed run cannot be a baseline; give a completed run\n"
    )
    shown = run_kb("compare", "--workload", "qwen", "--by", "backend")
    assert "cuda · compiled · 1x h100" in shown.stdout and "neuron · compiled · 64x trainium2" in shown.stdout


def test_cold_with_cold_and_what_differs(variety: KnowledgeBase) -> None:
    comparison = compared("2026-11-01-qwen-cuda-000001", "2026-11-02-qwen-cuda-000002")
    differences = comparison["differences"]
    assert "uncommitted changes False → True" in differences
    assert "tags cold → warm" in differences
    assert any(line.startswith("compile cache cold → warm") for line in differences)
    compile_s = rows(comparison)["compile_s"]
    assert compile_s["ratios"] == [1.0, None] and compile_s["verdicts"] == ["baseline", "warm vs cold"]
    # One run each: too few to call a one-off phase better or worse.
    cold_again = compared("2026-11-01-qwen-cuda-000001", "2026-11-01-qwen-cuda-000001")
    assert rows(cold_again)["compile_s"]["verdicts"] == ["baseline", ONCE]


def test_local_version_labels_fold_into_their_release(variety: KnowledgeBase) -> None:
    comparison = compared("--workload", "qwen", "--by", "version:torch")
    # 2.10.0+cu126 and 2.10.0+cu128 are one release: its newest run stands for it.
    assert [e["id"] for e in comparison["entries"]] == ["2026-11-02-qwen-cuda-000002", "2026-11-03-qwen-neuron-000003"]


def test_by_mode_holds_the_backend_fixed(variety: KnowledgeBase) -> None:
    result = run_kb("compare", "--workload", "qwen", "--by", "mode")
    assert result.returncode == 1
    assert "modes compared on cuda (--backend for another)" in result.stderr
    assert "eager: no usable run (1 running)" in result.stderr
    steps = {"median": 0.02, "p10": 0.019, "p90": 0.021, "count": 31}
    run(variety, "2026-11-07-qwen-cuda-000007", backend="cuda", mode="eager", tags=["resumed"],
        hardware={"accelerators": [{"name": "h100", "count": 1}]}, timings={"step_s": steps})  # fmt: skip
    comparison = compared("--workload", "qwen", "--by", "mode")
    assert [e["label"] for e in comparison["entries"]] == ["cuda · eager · 1x h100", "cuda · compiled · 1x h100"]
    assert "steady steps 31 → -" in comparison["differences"]


def test_the_filters_of_kb_ls_narrow_the_runs_first(kb: KnowledgeBase) -> None:
    for n, backend, batch in ((1, "cpu", 8), (2, "cuda", 8), (3, "cuda", 16)):
        run(kb, f"2026-11-0{n}-qwen-{backend}-00000{n}", backend=backend, settings={"batch": batch},
            metrics={"tokens_per_s": {"value": 1000.0 * n, "unit": "tokens/s"}})  # fmt: skip
    newest = compared("--workload", "qwen", "--by", "backend")
    # cuda has the most runs: its newest is the baseline, batch 16 against the cpu run's 8.
    assert [e["id"] for e in newest["entries"]] == ["2026-11-03-qwen-cuda-000003", "2026-11-01-qwen-cpu-000001"]
    assert "batch 16 → 8" in newest["differences"]
    same = compared("--workload", "qwen", "--by", "backend", "--setting", "batch=8")
    # Of the batch-8 runs each backend has one: the baseline is the first by name, and the batch is the same.
    assert [e["id"] for e in same["entries"]] == ["2026-11-01-qwen-cpu-000001", "2026-11-02-qwen-cuda-000002"]
    assert not any(line.startswith("batch") for line in same["differences"])
    since = run_kb("compare", "--workload", "qwen", "--by", "backend", "--since", "2026-11-02")
    assert since.returncode == 1 and since.stderr == "kb: error: only cuda so far; try --by mode\n"


def test_a_site_comparison_starts_from_the_incumbent_and_its_mode(variety: KnowledgeBase) -> None:
    from kb.answers.compare import newest_usable
    from kb.index.db import connect, index_path
    from kb.index.sync import sync

    run(variety, "2026-11-08-qwen-cuda-000008", backend="cuda", mode="eager",
        metrics={"tokens_per_s": {"value": 900.0, "unit": "tokens/s"}})  # fmt: skip
    sync(variety)
    db = connect(index_path(variety.cache_path))
    try:
        # The whole incumbent, mode included: cuda compiled first, although cuda eager is newer.
        entries, notes = newest_usable(variety, db, "qwen", "cuda compiled")
        assert entries[0].id == "2026-11-02-qwen-cuda-000002"
        assert {e.id for e in entries[1:]} == {"2026-11-08-qwen-cuda-000008", "2026-11-03-qwen-neuron-000003"}
        assert notes == ["aaa · compiled: no usable run (1 failed, 1 killed)"]
        assert newest_usable(variety, db, "qwen", "cuda")[0][0].id == "2026-11-08-qwen-cuda-000008"  # eager first
    finally:
        db.close()


def test_grouped_runs_stand_with_their_repeats_and_agree_with_the_board(kb: KnowledgeBase) -> None:
    for n, (mode, rate) in enumerate([("eager", 1000.0), ("eager", 1010.0), ("eager", 990.0),
                                      ("compiled", 1500.0), ("compiled", 1490.0), ("compiled", 1520.0)]):  # fmt: skip
        run(kb, f"2026-11-0{n + 1}-lm-cpu-00000{n}", backend="cpu", mode=mode, workload={"name": "lm"},
            versions={"torch": "2.10.0"}, metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    comparison = compared("--workload", "lm", "--by", "mode")
    assert comparison["runs"] == [3, 3]
    (said,) = rows(comparison)["tokens_per_s"]["verdicts"][1:]
    assert said.startswith("faster (n=3 vs 3, 95% interval ×") and said.endswith(", floor 2%)")
    board = json_data(run_kb("board", "--json").stdout)["workloads"][0]
    (compiled,) = [cell for cell in board["cells"] if cell["mode"] == "compiled"]
    assert compiled["comparison"]["verdict"] == "faster" and compiled["comparison"]["n"] == 3
