"""`r = ingest.pytorch.start(...)`: the instrumented run of a module-level script, with no block to indent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO, only_entry
from shown import added_lines, shown_lines

from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "tests" / "scripts" / "started.py"


# A Python without threading's private exit hooks: the script runs with the function removed before kb is imported
# (concurrent.futures, which torch needs, registered its own hook with it already: the pool is shut at atexit).
WITHOUT_THREADING_HOOK = (
    "import sys, runpy, threading, concurrent.futures.thread; del threading._register_atexit; "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_script(scenario: str, *, threading_hook: bool = True) -> subprocess.CompletedProcess:
    start = [] if threading_hook else ["-c", WITHOUT_THREADING_HOOK]
    return subprocess.run(
        [sys.executable, *start, str(SCRIPT), scenario],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )


@pytest.mark.parametrize(
    ("scenario", "threading_hook"),
    [("finish", True), ("exit", True), ("exit", False)],
    ids=["finish", "exit", "atexit"],
)
def test_a_run_finishes_by_finish_or_by_the_end_of_the_process(
    kb: KnowledgeBase, scenario: str, threading_hook: bool
) -> None:
    result = run_script(scenario, threading_hook=threading_hook)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("kb: recorded") == 1
    if scenario == "finish":  # the entry is written at finish(), before the script goes on
        assert result.stderr.index("kb: recorded") < result.stderr.index("after finish")
    entry = only_entry(kb)
    assert entry.status == "completed" and entry.data["workload"] == {"name": "test-mlp"}
    assert entry.data["timings"]["step_s"]["count"] == 8  # 10 steps, 2 of them warm-up
    assert entry.data["metrics"]["loss"]["step"] == 9
    assert entry.data["metrics"]["samples_per_s"]["value"] > 0


def test_an_uncaught_error_fails_the_run_with_its_class_phase_and_step(kb: KnowledgeBase) -> None:
    result = run_script("raise")
    assert result.returncode == 1
    assert "RuntimeError: CUDA out of memory" in result.stderr  # Python still prints the traceback
    entry = only_entry(kb)
    assert entry.status == "failed"
    failure = entry.data["failure"]
    assert failure["class"] == "oom" and failure["phase"] == "steady" and failure["step"] == 5
    assert entry.data["timings"]["step_s"]["count"] == 3


def test_sigterm_ends_the_run_as_interrupted(kb: KnowledgeBase) -> None:
    result = run_script("sigterm")
    assert result.returncode != 0
    entry = only_entry(kb)
    assert entry.status == "interrupted" and entry.data["failure"]["class"] == "interrupted"
    assert entry.data["timings"]["step_s"]["count"] == 3


def test_the_script_needs_no_more_lines_than_the_docs_show() -> None:
    assert 0 < len(added_lines(SCRIPT)) <= len(shown_lines("A script without a `with` block")) == 5
