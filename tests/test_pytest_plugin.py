"""`pytest --kb`: a real pytest run in a subprocess records its coverage entry, through the pytest11 entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import only_entry

from kb.store.knowledge_base import KnowledgeBase

SUITE = """
import pytest

def test_passes(): pass
def test_passes_too(): pass
def test_fails(): assert 1 == 2
@pytest.mark.skip(reason="requires 8 GPUs")
def test_needs_8(): pass
@pytest.mark.skip(reason="requires 2 GPUs")
def test_needs_2(): pass
@pytest.mark.xfail(reason="no lowering yet")
def test_lowering(): raise NotImplementedError("aten::_flex")
@pytest.fixture
def device(): raise OSError("no device")
def test_on_device(device): pass
"""


def pytest_run(folder: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    (folder / "test_suite.py").write_text(SUITE)
    command = [sys.executable, "-m", "pytest", "test_suite.py", "-q", "-p", "no:cacheprovider", *options]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=folder, env={**os.environ, **(env or {})}, timeout=120
    )


def test_pytest_kb_writes_the_coverage_entry(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = pytest_run(tmp_path, "--kb", "--kb-workload", "flex-attention", "--kb-backend", "neuron", "--kb-tag", "ci")
    assert result.returncode == 1  # the tests' own outcome, untouched
    assert "kb: recorded " in result.stdout and "2 of 7 passed" in result.stdout
    entry = only_entry(kb)
    data = entry.data
    assert entry.kind == "coverage" and data["workload"] == {"name": "flex-attention"} and data["backend"] == "neuron"
    assert data["tags"] == ["ci"] and data["provenance"] == {"source": "imported", "tool": "pytest --kb",
                                                             "environment": "run_time"}  # fmt: skip
    coverage = data["coverage"]
    assert (coverage["total"], coverage["passed"], coverage["failed"], coverage["errors"]) == (7, 2, 1, 1)
    assert coverage["skipped"] == 3 and coverage["xfailed"] == 1 and coverage["time_s"] >= 0
    groups = {(g["outcome"], g["reason"]): g["count"] for g in coverage["groups"]}
    assert groups[("skipped", "requires N GPUs")] == 2
    assert groups[("skipped", "expected failure: no lowering yet")] == 1
    assert groups[("error", "OSError in setup")] == 1 and groups[("failed", "AssertionError")] == 1
    assert data["metrics"]["pass_rate"]["value"] == round(100 * 2 / 7, 1)
    assert data["versions"]["python"] and data["hardware"]["cpu_cores"] >= 1  # the test process's environment
    attached = {a["path"].split("/", 1)[1] for a in data["attachments"]}
    assert {"cases.tsv", "pytest.xml"} <= attached
    assert "time=" in (kb.attachments_path(entry) / "pytest.xml").read_text()  # each case's duration


def test_a_junitxml_the_user_asked_for_is_kept_and_read(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = pytest_run(tmp_path, "--kb", "--junitxml", "mine.xml")
    assert result.returncode == 1
    assert (tmp_path / "mine.xml").exists()
    assert only_entry(kb).data["coverage"]["total"] == 7


def test_without_kb_the_plugin_does_nothing(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = pytest_run(tmp_path)
    assert result.returncode == 1 and "kb:" not in result.stdout
    assert list(kb.iter_entries()) == []
    assert "--kb-workload" in pytest_run(tmp_path, "--help").stdout  # loaded through the entry point


def test_without_a_knowledge_base_the_results_wait_in_the_file(kb: KnowledgeBase, tmp_path: Path) -> None:
    away = tmp_path / "away"
    away.mkdir()
    result = pytest_run(away, "--kb", "--junitxml", "results.xml", env={"KB_HOME": str(away)})  # not a knowledge base
    assert result.returncode == 1
    assert "`kb ingest junit results.xml` records them" in result.stdout
    assert list(kb.iter_entries()) == []
