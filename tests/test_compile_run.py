"""Compile evidence of one real cold compiled run, against torch's own totals and a TORCH_TRACE import of it."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from conftest import REPO

from ingest import steps
from ingest.importers.compile_trace import read_compile_trace
from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "tests" / "scripts" / "compile_story.py"
BREAK_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "# BREAK" in line)
DEF_LINE = next(n for n, line in enumerate(SCRIPT.read_text().splitlines(), 1) if line.startswith("def scaled("))


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One cold run (a fresh inductor cache) under TORCH_TRACE: its entry, and the trace's compile section."""
    root = tmp_path_factory.mktemp("story")
    base, _ = KnowledgeBase.init(root / "knowledge-base")
    env = {
        **os.environ, "KB_HOME": str(base.root), "TORCH_TRACE": str(root / "trace"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "cache"),
    }  # fmt: skip
    env.pop("KB_RUN_DIR", None)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "8"], env=env, cwd=root, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    (entry,) = base.iter_entries()
    trace = read_compile_trace(root / "trace", root)
    return {
        "entry": entry,
        "data": entry.data,
        "trace": trace.fields["compile"],
        "folder": base.attachments_path(entry) / "run",
    }


def test_compile_s_counts_every_compile_and_agrees_with_torch_and_the_trace(story: dict[str, Any]) -> None:
    section = story["data"]["compile"]
    split = section["compile_split_s"]
    assert split["forward"] > 0 and split["backward"] > 0 and split["recompiles"] > 0
    assert section["compile_s"] == pytest.approx(sum(split.values()), rel=1e-4)
    assert story["data"]["timings"]["compile_s"] == section["compile_s"]
    # torch's own total, Dynamo's compile callbacks (timed apart), and the TORCH_TRACE import of the same run.
    assert section["compile_s"] == pytest.approx(section["time_spent_s"]["total_wall_time"], rel=0.05)
    assert section["compile_s"] == pytest.approx(section["compile_wall_s"], rel=0.05)
    assert section["compile_s"] == pytest.approx(story["trace"]["compile_s"], rel=0.05)
    assert story["trace"]["compile_split_s"]["backward"] > 0


def test_a_graph_break_in_a_loop_counts_once_at_its_line_and_its_frame_ran_eagerly(story: dict[str, Any]) -> None:
    breaks = story["data"]["compile"]["graph_breaks"]
    (site,) = breaks["reasons"]
    assert site["reason"].startswith("Data-dependent branching")
    assert (site["count"], site["at"]) == (1, f"{SCRIPT}:{BREAK_LINE}")
    assert breaks["count"] == 1 == story["trace"]["graph_breaks"]["count"]
    (eager,) = breaks["eager_frames"]
    assert eager["function"] == "scaled" and eager["at"] == f"{SCRIPT}:{DEF_LINE}"
    assert "graph break in loop" in eager["reason"]
    frames = story["data"]["compile"]["frames"]
    assert [frame["function"] for frame in frames if frame.get("ran_eagerly")] == ["scaled"]
    traced = story["trace"]["frames"]
    assert [frame["function"] for frame in traced if frame.get("ran_eagerly")] == ["scaled"]


def test_a_step_that_recompiled_is_kept_out_of_steady_state(story: dict[str, Any]) -> None:
    data = story["data"]
    assert 5 in data["compile"]["compiling_steps"] and 0 in data["compile"]["compiling_steps"]
    timings = data["timings"]
    assert timings["step_s"]["count"] == 8 - 2 - 1  # warm-up and the recompiling step left out
    stream = steps.read_stream(story["folder"])
    assert stream is not None
    recompiled = stream["steps"][5]
    assert recompiled["compiled"] is True and timings["compiling_steps_s"] == pytest.approx(recompiled["s"], rel=1e-5)
    assert timings["step_s"]["max"] < recompiled["s"]
    assert "kept out of the steady-state figures" in story["entry"].body


SITES_SCRIPT = REPO / "tests" / "scripts" / "compile_sites.py"
SITE_LINES = {
    line.split("# SITE ", 1)[1]: n
    for n, line in enumerate(SITES_SCRIPT.read_text().splitlines(), 1)
    if "# SITE " in line
}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real compiled run with two print() sites, a logger call, a break in a loop and a recompile at every step,
    and `kb show` of its entry."""
    root = tmp_path_factory.mktemp("sites")
    base, _ = KnowledgeBase.init(root / "knowledge-base")
    env = {**os.environ, "KB_HOME": str(base.root)}
    env.pop("KB_RUN_DIR", None)
    result = subprocess.run(
        [sys.executable, str(SITES_SCRIPT)], env=env, cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    (entry,) = base.iter_entries()
    shown = subprocess.run(
        [sys.executable, "-m", "kb", "show", entry.id], env=env, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    return {"data": entry.data, "shown": shown.stdout.splitlines()}


def _block(lines: list[str], title: str) -> list[str]:
    """The lines of one section of `kb show`, from its title to the blank line after it."""
    start = next(index for index, line in enumerate(lines) if line.startswith(title))
    end = next((index for index in range(start, len(lines)) if not lines[index].strip()), len(lines))
    return lines[start:end]


@pytest.mark.slow
def test_kb_show_counts_graph_break_sites_with_how_often_each_was_met(sites: dict[str, Any]) -> None:
    breaks = sites["data"]["compile"]["graph_breaks"]
    at = {reason["at"].rsplit(":", 1)[1]: reason["count"] for reason in breaks["reasons"]}
    # Each print() is one site, met in the first compile and at each of the 3 recompiles of the frames around it.
    assert at[str(SITE_LINES["print 1"])] == at[str(SITE_LINES["print 2"])] == 4
    assert breaks["sites"] == 4 and breaks["count"] == sum(at.values())
    block = _block(sites["shown"], "Graph breaks")
    assert block[0] == f"Graph breaks (4 sites, met {breaks['count']}×)"
    printed = [line for line in block if f"compile_sites.py:{SITE_LINES['print 1']}: " in line]
    assert len(printed) == 1 and printed[0].startswith("4×") and "builtin operator `print`" in printed[0]
    assert "4 graph-break sites" in next(line for line in sites["shown"] if line.startswith("compile "))


@pytest.mark.slow
def test_kb_show_lists_one_reason_per_recompile(sites: dict[str, Any]) -> None:
    recompiles = sites["data"]["compile"]["recompiles"]
    assert recompiles["count"] == 9  # forward and the two frames resumed after its breaks, at 3 new batch sizes
    block = _block(sites["shown"], "Recompiles")
    assert block[0] == "Recompiles (9)" and len(block) == 1 + 9
    for line, (old, new) in zip(block[1:], [(4, 5)] * 3 + [(5, 6)] * 3 + [(6, 7)] * 3, strict=True):
        # the guard that failed this time, not those of older cache entries nor which entry it was ("0/1: ")
        assert line.endswith(f": tensor 'x' size mismatch at index 0. expected {old}, actual {new}"), line
        assert line.startswith("1×  forward: ") or line.startswith("1×  torch_dynamo_resume_in_forward_at_"), line


@pytest.mark.slow
def test_kb_show_marks_the_frame_that_ran_eagerly(sites: dict[str, Any]) -> None:
    (eager,) = sites["data"]["compile"]["graph_breaks"]["eager_frames"]
    assert eager["function"] == "halved"
    block = _block(sites["shown"], "Graph breaks")
    (line,) = [line for line in block if line.startswith("ran eagerly")]
    assert "halved at tests/scripts/compile_sites.py:" in line and "graph break in loop" in line
    frames = _block(sites["shown"], "Compile frames")
    assert [line.split()[1:3] for line in frames if "ran eagerly" in line] == [["halved", "(ran"]]
    assert "1 frame ran eagerly" in next(line for line in sites["shown"] if line.startswith("compile "))
