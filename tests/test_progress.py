"""Long indexing says how far it is: a bar with an estimate on a terminal, a line every few seconds in a pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_kb_in_terminal

from kb.model.entry import new_entry
from kb.store.knowledge_base import KnowledgeBase
from kb.terminal import progress

COUNT = progress.MIN_ITEMS


@pytest.fixture
def many(kb: KnowledgeBase) -> KnowledgeBase:
    for i in range(COUNT):
        entry = new_entry(
            f"2026-11-30-run-{i:06d}", f"run {i}", "run", recorded="2026-11-30T00:00:00Z", status="completed"
        )
        (kb.entries_path / f"{entry.id}.md").write_text(entry.serialise())
    return kb


def test_a_pipe_gets_a_line_every_few_seconds(many: KnowledgeBase) -> None:
    code = "import kb.terminal.progress as p, sys; p.PIPE_EVERY_S = 0.0; from kb.cli import main"
    code += "; sys.argv = ['kb', 'index']"
    code += "; main()"  # every step reported: a line every 0 s
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines, "no progress in a pipe"
    assert lines[0].startswith(f"kb: indexing: 1 of {COUNT:,} entries (0%), about ")
    assert lines[-1].startswith(f"kb: indexing: {COUNT:,} of {COUNT:,} entries (100%)")
    assert result.stdout.startswith(f"Indexed: {COUNT} added")


def test_a_terminal_gets_a_bar_with_an_estimate(many: KnowledgeBase) -> None:
    status, output = run_kb_in_terminal("index")
    assert status == 0
    text = output.decode()
    assert f"Indexing {COUNT} entries" in text and "about" in text and f"{COUNT}/{COUNT}" in text
    assert f"Indexed: {COUNT} added" in text


def test_a_short_job_shows_nothing(kb: KnowledgeBase) -> None:
    assert progress.Progress("Indexing", progress.MIN_ITEMS - 1).shown is False
    assert progress.Progress("Indexing", progress.MIN_ITEMS).shown is True


def test_the_pipe_line_estimates_the_rest() -> None:
    job = progress.Progress("Migrating", 400, unit="files")
    job.started -= 10.0  # 100 done in 10 s: 300 more take about 30 s
    job.done = 100
    assert job.line() == "migrating: 100 of 400 files (25%), about 30 s left"


def test_a_site_build_in_a_pipe_says_how_far_in_lines_that_fit(many: KnowledgeBase) -> None:
    code = "import kb.terminal.progress as p, sys; p.PIPE_EVERY_S = 0.0; from kb.cli import main"
    code += "; sys.argv = ['kb', 'site', 'build']; main()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    told = [line for line in result.stderr.splitlines() if line.startswith("kb: rendering: ")]
    assert told and " pages (" in told[-1] and "(100%)" in told[-1]
    assert result.stdout.startswith("Site: ")
    opened = f"Open {Path.cwd() / 'knowledge-base' / 'site' / 'index.html'}"  # a path is as long as it is
    assert opened in result.stdout.splitlines()
    assert max(len(line) for line in result.stdout.splitlines() if line != opened) <= 80, result.stdout


def test_a_site_build_on_a_terminal_shows_kbs_bar(many: KnowledgeBase) -> None:
    status, output = run_kb_in_terminal("site", "build")
    assert status == 0
    text = output.decode()
    assert "Rendering" in text and "pages" in text and "about" in text  # the estimate of kb's one progress display
