"""The instrumented-run API on real CPU runs: eager and compiled, failures of every kind, many ranks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, only_entry, run_kb

from ingest import steps
from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "tests" / "scripts" / "instrumented.py"


def run_script(
    scenario: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), scenario, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def test_an_eager_run_writes_its_own_entry(kb: KnowledgeBase) -> None:
    result = run_script("eager", "14")
    assert result.returncode == 0, result.stderr
    assert "kb: recorded" in result.stderr
    entry = only_entry(kb)
    data = entry.data
    assert entry.status == "completed" and data["mode"] == "eager" and data["backend"] == "cpu"
    assert data["provenance"]["environment"] == "run_time"
    timings = data["timings"]
    assert timings["load_s"] > 0 and timings["first_step_s"] > 0 and timings["warmup_s"] > 0
    assert timings["step_s"]["count"] == 12  # 14 steps, 2 left out as warm-up (the first call among them)
    assert timings["step_s"]["p10"] <= timings["step_s"]["median"] <= timings["step_s"]["p90"]
    # The run's own monotonic clock, not the difference of two timestamps kept to the second (0 for a short run).
    assert timings["wall_s"] >= timings["load_s"] + timings["first_step_s"] and timings["wall_s"] % 1 != 0
    metrics = data["metrics"]
    assert metrics["samples_per_s"]["unit"] == "samples/s" and metrics["samples_per_s"]["value"] > 0
    assert metrics["tokens_per_s"]["value"] == pytest.approx(metrics["samples_per_s"]["value"] * 32, rel=1e-3)
    assert metrics["loss"]["step"] == 13 and metrics["loss"]["value"] > 0
    assert data["settings"]["batch"] == 16 and data["settings"]["device"] == "cpu"
    assert data["versions"]["torch"].startswith("2.")
    assert data["precision"]["float32_matmul_precision"] == "highest"
    assert data["memory"]["host_peak_rss_gb"] > 0
    assert data["fallbacks"]["stayed_on_device"] is None  # the target is the CPU: fallback does not apply
    assert "compile" not in data
    assert data["settings"]["torch_num_threads"] >= 1 and data["hardware"]["cpu_isa"]
    load = data["hardware"]["load"]
    assert load["cores"] >= 1 and load["run_cpu_s"] > 0 and load["samples"] >= 2
    attached = {a["path"].split("/", 1)[1] for a in data["attachments"]}
    assert {"run/run.json", "run/events.jsonl", "run/metric-loss.txt", "run/ranks/rank-0.json"} <= attached
    assert {"run/steps.jsonl", "run/machine.jsonl", "run/packages.txt"} <= attached
    packages = (kb.attachments_path(entry) / "run" / "packages.txt").read_text().splitlines()
    assert f"torch=={data['versions']['torch']}" in packages and len(packages) > 20
    curve = (kb.attachments_path(entry) / "run" / "metric-loss.txt").read_text().split()
    assert len(curve) == 14
    assert not (kb.cache_path / "runs").exists() or not any((kb.cache_path / "runs").iterdir())


def test_under_kb_record_the_recorder_gets_everything(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--tag", "wrapped", "--", sys.executable, str(SCRIPT), "eager", "8")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.data["tags"] == ["wrapped"] and entry.data["provenance"]["tool"] == "kb record"
    assert entry.data["timings"]["step_s"]["count"] == 6 and entry.data["metrics"]["loss"]["step"] == 7
    assert entry.data["command"]["exit_code"] == 0
    # Who the run says it is, as run(...) was told: the entry is named by it, not by the program that ran.
    assert entry.title == "test-mlp cpu eager" and entry.data["workload"] == {"name": "test-mlp"}
    assert entry.data["backend"] == "cpu" and entry.data["mode"] == "eager"
    assert entry.data["settings"]["batch"] == 16 and entry.data["settings"]["scenario"] == "eager"


def test_options_given_to_kb_record_win_over_what_the_run_says(kb: KnowledgeBase) -> None:
    given = ("--title", "baseline", "--workload", "mlp-16", "--mode", "compiled", "--setting", "batch=8")
    result = run_kb("record", *given, "--tag", "wrapped", "--", sys.executable, str(SCRIPT), "eager", "4")
    assert result.returncode == 0, result.stderr
    data = only_entry(kb).data
    assert data["title"] == "baseline" and data["workload"] == {"name": "mlp-16"} and data["mode"] == "compiled"
    assert data["settings"]["batch"] == 8  # the run said 16
    assert data["backend"] == "cpu" and data["settings"]["scenario"] == "eager"  # what only the run said stays
    assert data["provenance"]["given"] == ["title", "workload", "mode", "settings.batch"]
    assert "Events skipped" not in only_entry(kb).body


def test_a_rerun_takes_what_the_run_says_today(kb: KnowledgeBase) -> None:
    # The original's settings seed the rerun's entry, but nobody typed them: the run's word of today replaces them.
    script = "import os\nfrom ingest.pytorch import run\nwith run(settings={'batch': int(os.environ['BATCH'])}): pass\n"
    assert run_kb("record", "--", sys.executable, "-c", script, env={"BATCH": "8"}).returncode == 0
    original = only_entry(kb)
    result = run_kb("rerun", "--yes", original.id, env={"BATCH": "16"})
    assert result.returncode == 0, result.stderr
    rerun = next(entry for entry in kb.iter_entries() if entry.id != original.id)
    assert original.data["settings"]["batch"] == 8 and rerun.data["settings"]["batch"] == 16
    assert "given" not in rerun.data["provenance"]


def test_a_started_run_names_its_entry_under_kb_record(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--", sys.executable, str(REPO / "tests" / "scripts" / "started.py"), "finish")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.title == "test-mlp cpu eager" and entry.data["workload"] == {"name": "test-mlp"}
    assert entry.data["mode"] == "eager" and entry.data["timings"]["step_s"]["count"] == 8


def test_metric_names_with_a_slash_keep_the_run(kb: KnowledgeBase, tmp_path: Path) -> None:
    from ingest.pytorch import run

    with run(workload="slashes", device="cpu", warmup_steps=1) as r:
        for index in range(3):
            with r.step():
                pass
            r.log("train/loss", 1.0 / (index + 1))
            r.log("train:loss", 5.0)  # the name "train/loss" becomes: the second keeps its own
    entry = only_entry(kb)
    metrics = entry.data["metrics"]
    assert metrics["train:loss"] == {"value": 5.0, "step": 2}
    assert metrics["train:loss-2"]["value"] == pytest.approx(1 / 3) and entry.data["timings"]["step_s"]["count"] == 2
    curves = kb.attachments_path(entry) / "run"
    assert (curves / "metric-train.loss-2.txt").read_text().split() == ["1.0", "0.5", "0.3333333333333333"]
    assert (curves / "metric-train.loss.txt").read_text().split() == ["5.0"] * 3
    script = "from ingest.pytorch import run\nwith run() as r:\n    with r.step(): pass\n    r.log('val/loss', 2.5)\n"
    result = run_kb("record", "--title", "recorded", "--", sys.executable, "-c", script)
    assert result.returncode == 0 and "kb: could not" not in result.stderr, result.stderr
    recorded = next(e for e in kb.iter_entries() if e.title == "recorded")
    assert recorded.data["metrics"]["val:loss"] == {"value": 2.5, "step": 0}


def test_a_killed_run_keeps_the_last_value_of_a_metric_named_with_a_slash(kb: KnowledgeBase) -> None:
    script = (
        "import os, signal\nfrom ingest.pytorch import run\nr = run().__enter__()\n"
        "for value in (3.0, 2.0):\n    with r.step(): pass\n    r.log('train/loss', value)\n"
        "r._flush(float('inf'))\nos.kill(os.getpid(), signal.SIGKILL)\n"  # as the OOM killer, after a flush
    )
    result = run_kb("record", "--", sys.executable, "-c", script)
    assert result.returncode == 128 + 9, result.stderr
    entry = only_entry(kb)
    assert entry.status == "killed" and entry.data["metrics"]["train:loss"] == {"value": 2.0, "step": 1}


def test_without_a_knowledge_base_the_run_folder_waits_for_kb_record_from(kb: KnowledgeBase, tmp_path: Path) -> None:
    away = tmp_path / "node"
    away.mkdir()
    result = run_script("eager", "6", env={"KB_HOME": ""}, cwd=away)
    assert result.returncode == 0, result.stderr
    (folder,) = (away / "kb-runs").iterdir()
    assert f"record it with `kb record --from kb-runs/{folder.name}`" in result.stderr
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["status"] == "completed" and manifest["versions"]["torch"].startswith("2.")
    assert list(kb.iter_entries()) == []
    imported = run_kb("record", "--from", str(folder), "--no-edit")
    assert imported.returncode == 0, imported.stderr
    entry = only_entry(kb)
    assert entry.data["timings"]["step_s"]["count"] == 4 and entry.data["provenance"]["environment"] == "run_time"


def test_a_compiled_run_records_compile_evidence(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = run_script("graph_break", "6", env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    assert result.returncode == 0, result.stderr
    data = only_entry(kb).data
    compiled = data["compile"]
    assert compiled["frame_count"] >= 2 and compiled["cache"] == "fresh"
    assert compiled["graph_breaks"]["count"] >= 1 and compiled["recompiles"]["count"] >= 1
    assert data["timings"]["compile_s"] > 0
    assert data["timings"]["first_step_s"] > data["timings"]["step_s"]["median"]  # preparation apart from speed


def test_a_real_out_of_memory_is_classified(kb: KnowledgeBase) -> None:
    result = run_script("oom")
    assert result.returncode == 1
    entry = only_entry(kb)
    assert entry.status == "failed"
    failure = entry.data["failure"]
    assert failure["class"] == "oom"
    assert "can't allocate memory" in failure["message"]
    assert failure["phase"] == "steady" and failure["step"] == 3
    assert (kb.attachments_path(entry) / "run" / "traceback.txt").read_text().startswith("Traceback")


def test_a_backend_that_rejects_an_operator_is_a_compile_error(kb: KnowledgeBase) -> None:
    result = run_script("reject")
    assert result.returncode == 1
    failure = only_entry(kb).data["failure"]
    assert failure["class"] == "compile_error"
    assert failure["phase"] == "first_step" and failure["step"] == 0
    assert "no lowering for" in failure["evidence"] or "no lowering for" in failure["message"]


def test_a_compile_budget_marks_compile_timeout(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = run_script("budget", env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cold")})
    assert result.returncode == 1
    failure = only_entry(kb).data["failure"]
    assert failure["class"] == "compile_timeout"
    assert "compile budget of 0.05 s" in failure["message"] + failure.get("evidence", "")


def test_sigterm_mid_run_still_writes_an_interrupted_entry(kb: KnowledgeBase) -> None:
    result = run_script("sigterm")
    assert result.returncode != 0
    entry = only_entry(kb)
    assert entry.status == "interrupted" and entry.data["failure"]["class"] == "interrupted"
    assert entry.data["timings"]["step_s"]["count"] == 3  # the steps before the signal are kept


def test_a_numerics_mismatch_is_stated(kb: KnowledgeBase) -> None:
    assert run_script("numerics", "4").returncode == 0
    entry = only_entry(kb)
    # The run completed; its result is not trustworthy, and filters, the board and the site must see that.
    assert entry.status == "completed"
    assert entry.data["failure"]["class"] == "numerical_mismatch"
    assert "out of tolerance" in entry.data["failure"]["message"]
    numerics = entry.data["numerics"]
    assert numerics["verdict"] == "fail"
    assert numerics["rtol"] == 1.3e-06 and numerics["atol"] == 1e-05  # PyTorch's float32 defaults
    assert 0 < numerics["fraction_out_of_tolerance"] <= 1
    assert numerics["max_abs_err"] == pytest.approx(0.127, rel=1e-3)


def torchrun(scenario: str, kb: KnowledgeBase, timeout: float = 240) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(SCRIPT),
        scenario,
        "8",
    ]
    return run_kb("record", "--", *command, timeout=timeout)


def test_two_ranks_make_one_entry(kb: KnowledgeBase) -> None:
    result = torchrun("ranks", kb)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.data["metrics"]["samples_per_s"]["per_rank"] is True  # rank 0's own, not the job's
    assert "rank 0's own" in entry.body
    ranks = entry.data["ranks"]
    assert ranks["world_size"] == 2 and ranks["reported"] == 2 and ranks["missing"] == []
    assert ranks["slowest_rank"] in (0, 1) and ranks["spread"] >= 1
    assert [r["rank"] for r in ranks["per_rank"]] == [0, 1]


def test_a_dead_rank_still_leaves_one_entry_with_what_each_rank_knew(kb: KnowledgeBase) -> None:
    result = torchrun("rank_dies", kb)
    assert result.returncode != 0
    entry = only_entry(kb)
    assert entry.status in ("failed", "interrupted")
    ranks = entry.data["ranks"]
    assert ranks["world_size"] == 2
    assert 1 in ranks.get("unfinished", []) or 1 in ranks["missing"]
    (died,) = [summary for summary in ranks["per_rank"] if summary["rank"] == 1]
    # What it did before dying at step 6, as of its last flush (every 2 s; the steps take 0.5 s).
    assert 1 <= died["steps"] <= 6 and died["first_step_s"] > 0


def test_importing_the_api_imports_nothing_heavy_beyond_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from ingest.pytorch import run; run"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
    assert "torch" in imported
    assert not imported & {"whoosh", "sqlite_utils", "markdown", "jsonschema", "typer", "rich", "pydantic"}


def test_a_sigkilled_run_keeps_the_steps_it_streamed(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--", sys.executable, str(SCRIPT), "sigkill", "14", timeout=300)
    assert result.returncode == 128 + 9, result.stderr
    entry = only_entry(kb)
    assert entry.status == "killed"
    run_folder = kb.attachments_path(entry) / "run"
    streamed = steps.read_stream(run_folder)
    assert streamed is not None
    # 10 steps of 0.5 s ran; the stream flushes every 2 s, so what came before the last flush is kept.
    kept = len(streamed["steps"])
    assert 3 <= kept <= 10
    timings = entry.data["timings"]
    assert timings["first_step_s"] > 0 and timings["step_s"]["count"] == kept - 2
    assert entry.data["metrics"]["loss"]["step"] >= kept - 2
    assert entry.data["metrics"]["samples_per_s"]["value"] > 0
    assert f"{kept} steps it streamed" in entry.body
    progress = steps.progress(run_folder)
    assert progress is not None and progress["steps"] == kept and "loss" in progress["last_logged"]


def test_a_failure_in_a_phase_keeps_its_phase(kb: KnowledgeBase) -> None:
    assert run_script("load_fails").returncode == 1
    failure = only_entry(kb).data["failure"]
    assert failure["phase"] == "load" and "step" not in failure
    assert failure["class"] == "environment" or failure["message"].startswith("FileNotFoundError")


def test_tokens_per_s_is_what_the_steady_steps_did_over_their_wall_time(kb: KnowledgeBase) -> None:
    result = run_script("tokens", "12")
    assert result.returncode == 0, result.stderr
    tokens, seconds = re.search(r"steady tokens (\d+) in ([\d.]+) s", result.stdout).groups()
    metrics = only_entry(kb).data["metrics"]
    # The script's own clock, around the steady steps with the pauses between them. Its reads and kb's sit a few
    # calls apart, which a busy machine can stretch by milliseconds; the median-step rate is off by far more.
    assert metrics["tokens_per_s"]["value"] == pytest.approx(int(tokens) / float(seconds), rel=0.05)
    assert metrics["tokens_per_s"]["unit"] == "tokens/s"
    # The median step leaves the 20 ms pauses out: a rate the run never reached.
    assert metrics["tokens_per_s_median_step"]["value"] > metrics["tokens_per_s"]["value"]


def test_mode_compiled_with_nothing_compiled_is_flagged(kb: KnowledgeBase) -> None:
    assert run_script("claims_compiled", "4").returncode == 0
    entry = only_entry(kb)
    assert entry.data["compile"]["nothing_compiled"] is True and entry.data["compile"]["frame_count"] == 0
    assert "torch.compile compiled nothing" in entry.body


def test_an_uninstrumented_torchrun_failure_says_what_each_rank_raised(kb: KnowledgeBase) -> None:
    script = REPO / "tests" / "scripts" / "ddp_cuda_setup.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)]
    result = run_kb("record", "--", *command, timeout=240)
    assert result.returncode == 1
    failure = only_entry(kb).data["failure"]
    # The output ends in torchrun's ChildFailedError table; the ranks' own exceptions say why.
    assert failure["message"] == "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice' (ranks 0, 1)"
    assert [item["rank"] for item in failure["exceptions"]] == [0, 1, None]
    assert failure["class"] == "environment"


class _Unreadable:
    """A logged value whose read-back fails, as a tensor on a device that has gone away does."""

    def item(self) -> float:
        raise RuntimeError("device lost")


def test_a_value_that_cannot_be_read_back_never_breaks_the_run(kb: KnowledgeBase, tmp_path: Path) -> None:
    from ingest.pytorch import run

    with run(workload="unreadable", device="cpu", out=tmp_path / "runs", warmup_steps=1) as r:
        for _ in range(3):
            with r.step():
                pass
            r.log("loss", _Unreadable())
            r.log("lr", 0.1)
        r._flush(float("inf"))  # a flush while the run goes on, as every 2 s
    data = only_entry(kb).data
    assert data["metrics"]["loss"] == {"value": None, "step": 2} and data["metrics"]["lr"]["value"] == 0.1
    assert data["timings"]["step_s"]["count"] == 2
