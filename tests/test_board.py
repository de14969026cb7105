"""`kb board`: the answer per workload and backend over a knowledge base holding every trap of real variety.

Real `kb record` runs (eager and compiled on the CPU, one that fails) beside hand-written entries for what
cannot run here: 64 devices, another backend whose numerics failed, a backend with only killed and failed
runs, a shape that differs, a reported figure, workloads with only failures or only reports.
"""

from __future__ import annotations

import json
import sys
import time

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

SCRIPT = (
    "import json, os, sys\n"
    "def emit(**event):\n"
    "    open(os.path.join(os.environ['KB_RUN_DIR'], 'events.jsonl'), 'a').write(json.dumps(event) + '\\n')\n"
    "for field, value in json.loads(sys.argv[1]).items():\n"
    "    emit(event='set', field=field, value=value)\n"
    "emit(event='metric', name='tokens_per_s', value=float(sys.argv[2]), unit='tokens/s')\n"
    "sys.exit(int(sys.argv[3]))\n"
)
STEP = {"median": 0.02, "p10": 0.019, "p90": 0.021, "count": 50}


def record(base: KnowledgeBase, mode: str, rate: float, fields: dict, exit_code: int = 0, *extra: str) -> str:
    result = run_kb(
        "--kb", str(base.root),
        "record", "--workload", "lm", "--backend", "cpu", "--mode", mode, "--setting", "batch=8", *extra,
        "--", sys.executable, "-c", SCRIPT, json.dumps(fields), str(rate), str(exit_code),
    )  # fmt: skip
    assert ("recorded " in result.stderr) and result.returncode == exit_code, result.stderr
    time.sleep(1.01 - time.time() % 1)  # entries are recorded to the second: the next one is newer, never a tie
    return result.stderr.split("recorded ")[1].split()[0]


def hand(kb: KnowledgeBase, entry_id: str, backend: str, rate: float | None, **fields) -> None:
    fields.setdefault("status", "completed")
    fields.setdefault("mode", "compiled")
    fields.setdefault("workload", {"name": "lm"})
    fields.setdefault("settings", {"batch": 8})
    if rate is not None:
        fields.setdefault("metrics", {"tokens_per_s": {"value": rate, "unit": "tokens/s"}})
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", backend=backend, **fields)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    base, _ = KnowledgeBase.init(tmp_path_factory.mktemp("board") / "knowledge-base")
    record(base, "eager", 5000.0, {"timings.step_s": STEP})
    record(base, "compiled", 7500.0, {"timings.step_s": STEP, "timings.compile_s": 30.0, "compile": {"cache": "fresh"},
                                "numerics": {"verdict": "pass"}})  # fmt: skip
    record(base, "compiled", 7400.0, {"timings.step_s": STEP, "timings.compile_s": 2.0}, 0, "--tag", "warm")
    record(base, "compiled", 0.0, {}, 3)  # a crash: completed 3 of 4
    # A 64-device run: its throughput counts per device.
    hand(base, "2026-11-10-lm-cuda-000001", "cuda", 640000.0, numerics={"verdict": "pass"},
         hardware={"accelerators": [{"name": "h100", "count": 64}]}, fallbacks={"stayed_on_device": True})  # fmt: skip
    # The fastest of all, but its numerics failed: its speed-up counts as zero.
    hand(base, "2026-11-11-lm-xla-000002", "xla", 50000.0, numerics={"verdict": "fail"})
    # Another batch size: another program.
    hand(base, "2026-11-12-lm-rocm-000003", "rocm", 9000.0, settings={"batch": 16}, numerics={"verdict": "pass"})
    # A backend alphabetically first with only killed and failed runs.
    hand(base, "2026-11-13-lm-aaa-000004", "aaa", None, status="killed", failure={"class": "timeout"})
    hand(base, "2026-11-14-lm-aaa-000005", "aaa", None, status="failed",
         failure={"class": "compile_error", "message": "neuronx-cc exited 70"})  # fmt: skip
    hand(base, "2026-11-15-lm-aaa-000006", "aaa", None, status="failed",
         failure={"class": "compile_error", "message": "neuronx-cc exited 70"})  # fmt: skip
    # A reported figure, far above anything measured: listed apart, never ranked.
    hand(base, "2026-11-16-lm-report-000007", "neuron", 900000.0, kind="report", status=None,
         provenance={"source": "reported", "publisher": "Vendor blog", "date": "2026-11-01"})  # fmt: skip
    hand(base, "2026-11-17-broken-000008", "cpu", None, status="failed", workload={"name": "broken"},
         failure={"class": "oom", "message": "out of memory"})  # fmt: skip
    hand(base, "2026-11-18-paper-000009", "tpu", 1.0e6, kind="report", status=None, workload={"name": "paper"},
         provenance={"source": "reported", "publisher": "Paper"})  # fmt: skip
    return base


def board(base: KnowledgeBase, *args: str):
    return run_kb("--kb", str(base.root), "board", *args)


def board_json(base: KnowledgeBase, *args: str) -> dict:
    result = board(base, "--json", *args)
    assert result.returncode == 0, result.stderr
    return json_data(result.stdout)


def cells(data: dict, workload: str) -> dict[str, dict]:
    (found,) = [w for w in data["workloads"] if w["workload"] == workload]
    return {cell["label"]: cell for cell in found["cells"]} | {"": found}


def test_every_trap_gets_the_right_answer(filled: KnowledgeBase) -> None:
    lm = cells(board_json(filled), "lm")
    assert lm[""]["baseline"] == "cpu · eager"  # never the killed/failed first group; eager before compiled
    eager, compiled = lm["cpu · eager"], lm["cpu · compiled"]
    assert eager["verdict"] == "baseline" and eager["figure"]["value"] == 5000.0 and eager["numerics"] == "unchecked"
    assert compiled["completed"] == 2 and compiled["tried"] == 3
    assert compiled["failure"]["class"] == "crash" and compiled["failure"]["count"] == 1
    # The newest compiled run is the warm one, unchecked: the median speed-up is shown but does not count.
    assert compiled["ratio"] == pytest.approx(1.49) and compiled["speedup"] is None and compiled["n"] == 2
    assert compiled["verdict"] == "unchecked"
    assert compiled["cold_compile"]["seconds"] == 30.0 and compiled["warm_compile"]["seconds"] == 2.0
    cuda = lm["cuda · compiled"]
    assert cuda["figure"]["value"] == 10000.0 and cuda["figure"]["devices"] == 64
    assert cuda["speedup"] == pytest.approx(2.0) and cuda["verdict"] == "counted"
    assert cuda["differences"] == ["per device: 1 vs 64 devices"] and cuda["stayed"] == "yes"
    xla = lm["xla · compiled"]
    assert xla["ratio"] == pytest.approx(10.0) and xla["speedup"] == 0.0 and xla["verdict"] == "numerics failed"
    rocm = lm["rocm · compiled"]
    assert rocm["ratio"] is None and rocm["verdict"] == "not comparable: batch 8 vs 16"
    broken = lm["aaa · compiled"]
    assert broken["figure"] is None and broken["note"] == "only failed runs (3)"
    assert broken["failure"] == {"class": "compile_error", "count": 2, "message": "neuronx-cc exited 70",
                                 "entry": "2026-11-15-lm-aaa-000006"}  # fmt: skip
    assert lm["neuron · compiled"]["note"] == "only reported figures" and lm["neuron · compiled"]["ratio"] is None
    (reported,) = lm[""]["reported"]
    assert reported["entry"] == "2026-11-16-lm-report-000007" and reported["publisher"] == "Vendor blog"
    # One run a side: faster by its figures, but no verdict without repeats.
    assert lm[""]["best"] == (
        "no verdict yet: cuda · compiled (compiled vs eager) is inconclusive ×2 "
        "(n=1 vs 1, floor 2%; too few runs: 3 on each side give an interval)"
    )
    only_failed = cells(board_json(filled), "broken")
    assert only_failed[""]["baseline"] is None and only_failed["cpu · compiled"]["note"] == "only failed runs (1)"
    only_reported = cells(board_json(filled), "paper")
    assert only_reported["tpu · compiled"]["note"] == "only reported figures"
    assert only_reported[""]["best"] == "none yet; only reported figures"


def test_the_incumbent_is_the_baseline(filled: KnowledgeBase) -> None:
    lm = cells(board_json(filled, "--incumbent", "cuda"), "lm")
    assert lm[""]["baseline"] == "cuda · compiled" and lm[""]["baseline_reason"] == "the incumbent"
    assert lm["cpu · eager"]["ratio"] == pytest.approx(0.5)
    config = filled.root / "kb.toml"
    saved = config.read_text()
    try:
        config.write_text(saved.replace('incumbent = ""', 'incumbent = "nope"'))
        lm = cells(board_json(filled), "lm")
        assert (
            lm[""]["baseline"] == "cpu · eager" and "the incumbent nope has no usable run" in lm[""]["baseline_reason"]
        )
    finally:
        config.write_text(saved)


def test_the_board_for_people_fits_80_columns_and_says_each_cell(filled: KnowledgeBase) -> None:
    shown = board(filled)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    text = shown.stdout
    words = " ".join(text.split())  # long lines wrap, never cut
    assert "lm: baseline cpu · eager (guessed: most completed runs)" in text
    assert "answer: no verdict yet: cuda · compiled (compiled vs eager) is inconclusive ×2" in words
    said = ("×0 (num.)", "×1.49?", "10,000 tok/s/dev", "compile: cold 30 s, warm 2 s", "2/3", "only failed runs (3)",
            "failures: compile_error ×2: neuronx-cc exited 70", "not comparable: batch 8 vs 16",
            "reported, not ranked: neuron · compiled 900,000 tok/s (Vendor blog)")  # fmt: skip
    for expected in said:
        assert expected in words, expected
    markdown = board(filled, "--markdown", "--workload", "lm").stdout
    assert "| cuda · compiled | 10,000 tok/s/dev | ×2~ | passed |" in markdown
    assert "| cpu · compiled | 7,450 tok/s | ×1.49? | unchecked | 30 s / 2 s | 2/3 |" in markdown
    assert "- neuron · compiled: 900,000 tok/s, Vendor blog (`2026-11-16-lm-report-000007`)" in markdown


def test_the_three_renderings_say_one_thing(filled: KnowledgeBase) -> None:
    lm = cells(board_json(filled), "lm")
    # The CPU has no accelerator to leave: one answer in the data, for the board, --missing and the site.
    assert lm["cpu · eager"]["stayed"] == "n/a" and lm["cpu · compiled"]["stayed"] == "n/a"
    lines = board(filled, "--workload", "lm").stdout.splitlines()
    placed = [line for line in lines if "on accelerator:" in line and "-lm-cpu-" in line]
    assert len(placed) == 2 and all("on accelerator: n/a" in line for line in placed), placed
    # A pair with only reported figures says so once, on the reported line below it.
    assert not any("only reported figures" in line for line in lines)
    assert any(line.startswith("  reported, not ranked: neuron · compiled") for line in lines)
    markdown = board(filled, "--markdown", "--workload", "lm").stdout
    # No run, no verdict: the Markdown says `-` as the terminal and the site do.
    assert "| aaa · compiled | - | - | - | - | 0/3 | - | compile_error ×2 |" in markdown
    assert "| neuron · compiled | - | - | - | - | 0/0 | - |" in markdown
    assert "| cpu · eager | 5,000 tok/s | baseline | unchecked | - | 1/1 | n/a |" in markdown
    # An incumbent without a run: its reason printed whole, wrapped within 80 columns.
    shown = board(filled, "--incumbent", "tpu", "--workload", "lm").stdout
    assert max(len(line) for line in shown.splitlines()) <= 80
    words = " ".join(shown.split())
    assert "lm: baseline cpu · eager (the incumbent tpu has no usable run here; guessed: most completed runs)" in words
    assert "answer: none yet; only reported figures" in board(filled, "--workload", "paper").stdout


def test_the_checklist_says_what_is_missing(filled: KnowledgeBase) -> None:
    lm = cells(board_json(filled), "lm")
    checks = {c["question"]: c for c in lm["cuda · compiled"]["checklist"]}
    assert checks["numerics agree with a reference"]["ok"] is True
    assert checks["work stayed on the accelerator"]["ok"] is True
    assert checks["a cold and a warm compile measured"]["ok"] is False
    assert checks["test coverage disclosed"]["detail"] == "kb ingest junit results.xml --workload lm --backend cuda"
    compiled = {c["question"]: c for c in lm["cpu · compiled"]["checklist"]}
    assert compiled["a cold and a warm compile measured"]["ok"] is True
    assert compiled["settings and versions recorded"]["ok"] is True
    assert {c["question"]: c["ok"] for c in lm["cpu · eager"]["checklist"]}[
        "a cold and a warm compile measured"
    ] is None
    missing = board(filled, "--missing", "--workload", "lm").stdout
    assert "lm on xla · compiled:" in missing and "NO  numerics agree with a reference" in missing
    assert "numerics failed: its speed-up counts as zero" in missing


def test_an_empty_knowledge_base_says_how_to_start(kb: KnowledgeBase) -> None:
    shown = run_kb("board")
    assert shown.returncode == 0 and shown.stdout.startswith("No runs yet: record one with kb record")
    assert json_data(run_kb("board", "--json").stdout)["workloads"] == []
    assert run_kb("board", "--missing").stdout == "No runs yet: nothing to check.\n"
