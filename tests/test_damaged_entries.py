"""Entry files that are damaged or are not files at all: each is named as a problem, no command crashes or blocks."""

from __future__ import annotations

import socket

import pytest
from conftest import run_kb, write_entry

from kb.store import KnowledgeBase


def _running(kb: KnowledgeBase, entry_id: str, started: str) -> None:
    recorder = {"host": socket.gethostname(), "pid": 2**22 + 12345, "started": 1.0}  # a pid no process has
    write_entry(kb, entry_id, recorded="2026-01-02T00:00:00Z", status="running", recorder=recorder,
                timings={"started": started}, command={"argv": ["true"], "line": "true", "cwd": "/"})  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timings.started", "2026-02-30T00:00:00Z"),
        ("recorded", "9999-99-99T99:99:99Z"),
        ("recorded", "2026-02-29T24:00:00Z"),
    ],
)
def test_an_impossible_time_is_a_problem_and_no_command_crashes(kb: KnowledgeBase, field: str, value: str) -> None:
    started = value if field == "timings.started" else "2026-01-02T00:00:00Z"
    _running(kb, "2026-01-02-damaged-000001", started)
    path = kb.entries_path / "2026-01-02-damaged-000001.md"
    if field == "recorded":
        path.write_text(path.read_text().replace("recorded: '2026-01-02T00:00:00Z'", f"recorded: '{value}'"))
        assert value in path.read_text()
    write_entry(kb, "2026-01-03-fine-000002", recorded="2026-01-03T00:00:00Z", status="completed")
    for args in (["ls"], ["search", "fine"], ["show", "2026-01-03-fine"]):
        result = run_kb(*args)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 0, result.stderr
        assert "fine" in result.stdout
    result = run_kb("check")
    assert "Traceback" not in result.stderr and result.returncode == 1
    assert f"{field}: '{value}' is not a real date and time" in result.stdout + result.stderr
