"""Hugging Face Trainer with KbCallback: a tiny GPT-2 from a config, trained on random tokens in real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, only_entry, run_kb
from shown import added_lines, shown_lines

from kb.store.knowledge_base import KnowledgeBase

pytest.importorskip("transformers", reason="needs kb's hf extra (pip install -e '.[hf]')")
SCRIPT = REPO / "tests" / "scripts" / "hf_train.py"


def train(scenario: str, tmp_path: Path, *launcher: str) -> subprocess.CompletedProcess:
    command = [sys.executable, *launcher, str(SCRIPT), scenario, str(tmp_path / "trainer")]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_an_eager_training_records_phases_steady_steps_and_the_logs(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = train("eager", tmp_path)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    assert entry.status == "completed" and data["mode"] == "eager" and data["backend"] == "cpu"
    assert data["workload"] == {"name": "tiny-gpt2"} and data["tags"] == ["hf"]
    timings = data["timings"]
    assert timings["first_step_s"] > 0 and timings["warmup_s"] > 0
    assert timings["step_s"]["count"] == 6  # 8 optimizer steps, 2 of them warm-up
    assert timings["evaluate_s"] > 0 and timings["train_s"] >= timings["first_step_s"] + timings["warmup_s"]
    settings = data["settings"]
    assert settings["batch"] == 4 and settings["seq"] == 16 and settings["dtype"] == "fp32"
    assert settings["torch_compile"] is False and settings["steps"] == 8 and settings["world_size"] == 1
    metrics = data["metrics"]
    assert metrics["loss"]["step"] == 8 and metrics["loss"]["value"] > 0  # logged every 2 steps
    assert metrics["learning_rate"]["value"] > 0 and metrics["eval_loss"]["step"] == 8
    assert metrics["tokens_per_s"]["value"] == pytest.approx(metrics["samples_per_s"]["value"] * 16, rel=1e-3)
    assert "eval_runtime" not in metrics and "epoch" not in metrics
    assert (kb.attachments_path(entry) / "run" / "metric-loss.txt").read_text().count("\n") == 4
    assert "compile" not in data
    assert data["versions"]["transformers"]


def test_torch_compile_true_records_compile_evidence_and_names_the_run_under_kb_record(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    command = [sys.executable, str(SCRIPT), "compiled", str(tmp_path / "trainer")]
    result = run_kb("record", "--", *command, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}, timeout=600)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    # What the callback was told, and the mode it read from torch_compile, reach the recorder's entry.
    assert entry.title == "tiny-gpt2 cpu compiled" and data["workload"] == {"name": "tiny-gpt2"}
    assert data["mode"] == "compiled" and data["backend"] == "cpu" and data["tags"] == ["hf"]
    assert data["provenance"]["tool"] == "kb record" and data["settings"]["batch"] == 4
    assert data["settings"]["torch_compile"] is True and data["settings"]["torch_compile_backend"] == "aot_eager"
    assert data["compile"]["frame_count"] >= 1 and data["compile"]["graphs"] >= 1
    assert data["timings"]["compile_s"] > 0
    assert data["timings"]["first_step_s"] > data["timings"]["step_s"]["median"]  # the compile is in the first step


def test_an_error_in_training_fails_the_entry_with_its_class_and_step(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = train("raise", tmp_path)
    assert result.returncode == 1 and "RuntimeError: CUDA out of memory" in result.stderr
    entry = only_entry(kb)
    assert entry.status == "failed"
    failure = entry.data["failure"]
    assert failure["class"] == "oom" and failure["phase"] == "steady" and failure["step"] == 5
    assert entry.data["timings"]["step_s"]["count"] == 3


def test_a_defect_in_kb_is_noted_and_training_goes_on(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = train("broken", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "done broken" in result.stdout
    entry = only_entry(kb)
    assert entry.status == "completed" and entry.data["metrics"]["loss"]["step"] == 8
    assert "kb's on_step_begin hook failed (ValueError: a defect in kb); training went on without it" in entry.body


def test_two_processes_under_torchrun_make_one_entry(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = train("ranks", tmp_path, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
    assert result.returncode == 0, result.stderr
    data = only_entry(kb).data
    assert data["settings"]["world_size"] == 2
    ranks = data["ranks"]
    assert ranks["world_size"] == 2 and ranks["reported"] == 2 and ranks["missing"] == []
    assert all(rank["steps"] == 8 for rank in ranks["per_rank"])
    metrics = data["metrics"]  # from the Trainer's count of the batches' tokens: 4 x 16 a step on each rank
    assert metrics["tokens_per_s"]["value"] == pytest.approx(metrics["samples_per_s"]["value"] * 16, rel=1e-3)


def test_the_trainer_needs_no_more_lines_than_the_docs_show() -> None:
    assert 0 < len(added_lines(SCRIPT)) <= len(shown_lines("Hugging Face Trainer")) == 2
