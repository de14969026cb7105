"""Lightning (KbLogger) and Accelerate (KbTracker): a tiny MLP trained on the CPU in real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, only_entry, run_kb
from shown import added_lines, shown_lines

from kb.store.knowledge_base import KnowledgeBase

pytest.importorskip("lightning", reason="needs kb's lightning extra (pip install -e '.[lightning]')")
pytest.importorskip("accelerate", reason="needs kb's accelerate extra (pip install -e '.[accelerate]')")
SCRIPTS = {
    "lightning": REPO / "tests/scripts/lightning_train.py",
    "accelerate": REPO / "tests/scripts/accelerate_train.py",
}
FRAMEWORKS = sorted(SCRIPTS)
# steps done and steady steps counted (2 are warm-up), the metric the script logs, the hook the defect is in
EXPECTED = {"lightning": (10, 8, "train:loss", "on_train_batch_start"), "accelerate": (12, 10, "loss", "start")}


def train(framework: str, scenario: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    command = [sys.executable, str(SCRIPTS[framework]), scenario]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_eager_training_records_steady_steps_metrics_and_settings(
    kb: KnowledgeBase, tmp_path: Path, framework: str
) -> None:
    result = train(framework, "eager", tmp_path)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    steps, steady, metric, _ = EXPECTED[framework]
    assert entry.status == "completed" and data["mode"] == "eager" and data["workload"] == {"name": "tiny-mlp"}
    timings = data["timings"]
    assert timings["first_step_s"] > 0 and timings["warmup_s"] > 0 and timings["step_s"]["count"] == steady
    assert data["metrics"][metric]["value"] > 0
    assert data["metrics"]["samples_per_s"]["value"] > 0 if framework == "lightning" else True
    assert "compile" not in data
    if framework == "lightning":
        # The training's duration, as the Trainer of transformers gives train_s: Lightning's own Timer agrees.
        lightning_s = float(result.stdout.rsplit("train ", 1)[1].split()[0])
        assert timings["train_s"] == pytest.approx(lightning_s, rel=1e-3, abs=2e-3)
        assert timings["train_s"] >= timings["first_step_s"] + timings["warmup_s"] + timings["evaluate_s"]
        assert timings["evaluate_s"] > 0 and data["metrics"]["val:loss"]["value"] > 0
        assert data["settings"]["hidden"] == 32 and data["settings"]["precision"] == "32-true"  # hyperparameters
    else:
        assert data["settings"]["lr"] == 0.05 and data["settings"]["num_processes"] == 1  # init_trackers' config
        assert data["metrics"]["loss"]["step"] == steps - 1


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_compiled_training_records_compile_evidence_and_names_the_run_under_kb_record(
    kb: KnowledgeBase, tmp_path: Path, framework: str
) -> None:
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    result = run_kb("record", "--", sys.executable, str(SCRIPTS[framework]), "compiled", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    # What the logger or tracker was told, and the mode it found, reach the recorder's entry.
    assert entry.title == "tiny-mlp cpu compiled" and data["workload"] == {"name": "tiny-mlp"}
    assert data["mode"] == "compiled" and data["backend"] == "cpu" and data["provenance"]["tool"] == "kb record"
    assert data["compile"]["frame_count"] >= 1 and data["timings"]["compile_s"] > 0
    assert data["timings"]["first_step_s"] > data["timings"]["step_s"]["median"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_error_in_training_fails_the_entry_with_its_class_and_step(
    kb: KnowledgeBase, tmp_path: Path, framework: str
) -> None:
    result = train(framework, "raise", tmp_path)
    assert result.returncode == 1 and "RuntimeError: CUDA out of memory" in result.stderr
    entry = only_entry(kb)
    failure = entry.data["failure"]
    assert entry.status == "failed" and failure["class"] == "oom"
    assert failure["phase"] == "steady" and failure["step"] == 5


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_defect_in_kb_is_noted_and_training_goes_on(kb: KnowledgeBase, tmp_path: Path, framework: str) -> None:
    result = train(framework, "broken", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "done broken" in result.stdout
    entry = only_entry(kb)
    metric, hook = EXPECTED[framework][2:]
    assert entry.status == "completed" and entry.data["metrics"][metric]["value"] > 0
    assert f"kb's {hook} hook failed (ValueError: a defect in kb); training went on without it" in entry.body


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_training_needs_no_more_lines_than_the_docs_show(framework: str) -> None:
    section = {"lightning": "Lightning", "accelerate": "Accelerate"}[framework]
    assert 0 < len(added_lines(SCRIPTS[framework])) <= len(shown_lines(section)) == 2
