"""`kb show` of a run that is still going shows its progress so far, from the steps it streams; a run killed with
SIGKILL (kb record and all) keeps them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, json_data, run_kb

from ingest import steps
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

SCRIPT = REPO / "tests" / "scripts" / "long_run.py"
WAIT_S = 120.0  # for a busy machine to start torch and write the first flush; never a measure of speed


def _record(stop: Path) -> subprocess.Popen:
    """`kb record` of the long run, in its own process group so that one signal can kill the recorder and run."""
    return subprocess.Popen(
        [sys.executable, "-m", "kb", "record", "--", sys.executable, str(SCRIPT), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def _streamed(kb: KnowledgeBase, count: int) -> tuple[Entry, dict]:
    """The running entry once its run has streamed `count` steps and a logged value."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        entries = list(kb.iter_entries([]))
        if entries:
            found = steps.progress(kb.attachments_path(entries[0]) / "run")
            if found and found["steps"] >= count and found["last_logged"]:
                return entries[0], found
        time.sleep(0.2)
    pytest.fail(f"no {count} steps streamed within {WAIT_S:.0f} s")


def test_kb_show_of_a_running_entry_shows_its_progress_so_far(kb: KnowledgeBase, tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    recorder = _record(stop)
    try:
        entry, found = _streamed(kb, 3)
        assert entry.status == "running"
        shown = run_kb("show", entry.id)
        assert shown.returncode == 0, shown.stderr
        text = shown.stdout
        assert "Progress so far" in text
        done = int(re.search(r"steps\s+(\d+) done in \S+ \S+ since the run began", text).group(1))
        assert done >= found["steps"]
        rate = r"rate so far\s+[\d.]+ steps/s · [\d.,]+ samples/s \(first steps and compiles included\)"
        assert re.search(rate, text)
        assert re.search(r"recent step\s+\S+ \S+ median of the last \d+", text)
        assert re.search(r"last loss\s+[\d.]+ at step \d+", text)
        assert "the stream's last write" in text
        as_json = json_data(run_kb("show", entry.id, "--json").stdout)
        assert as_json["front_matter"]["status"] == "running"
        assert as_json["progress"]["steps"] >= found["steps"] and "loss" in as_json["progress"]["last_logged"]
    finally:
        stop.touch()
        recorder.communicate(timeout=WAIT_S)
    assert recorder.returncode == 0
    finished = run_kb("show", entry.id)
    assert "completed" in finished.stdout and "Progress so far" not in finished.stdout
    assert "progress" not in json_data(run_kb("show", entry.id, "--json").stdout)


def test_kb_show_of_a_run_sigkilled_with_its_recorder_shows_the_steps_it_streamed(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    recorder = _record(tmp_path / "stop")
    try:
        entry, _ = _streamed(kb, 4)
    finally:
        os.killpg(recorder.pid, signal.SIGKILL)  # the recorder and the run at once, as a node's OOM killer may
        recorder.communicate(timeout=WAIT_S)
    assert entry.status == "running"
    kept = len(steps.read_stream(kb.attachments_path(entry) / "run")["steps"])
    shown = run_kb("show", entry.id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert re.search(r"status\s+killed", text) and "Progress so far" not in text
    assert f"from the {kept} steps it streamed" in " ".join(text.split())
    assert re.search(rf"steady step\s+\S+ \S+ median \(.*{kept - 2} steps\)", text)
    assert re.search(r"loss [\d.]+ at step \d+", text)
    settled = KnowledgeBase.find().load(entry.id)
    assert settled.status == "killed" and settled.data["timings"]["step_s"]["count"] == kept - 2
