"""`kb record` while its output cannot be kept: a disk that fills as the command prints, and background children
that keep the command's output open after it ended. The command runs on with its output passed through; kb
ends when the command does; the entry says what happened."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import only_entry, write_entry

from kb.store.knowledge_base import KnowledgeBase

LINES = 60_000
PRINTER = f"import sys\nfor n in range({LINES}): print(f'line {{n:06d}} ' + 'x' * 40)\nprint('done', file=sys.stderr)"
SIZE = 2 * 1024 * 1024


def _tmpfs(folder: Path) -> bool:
    """A real 2 MB tmpfs at `folder`, where this process may mount one."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(folder)], capture_output=True)
    return mounted.returncode == 0


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[KnowledgeBase, dict]]:
    """A knowledge base on a 2 MB file system (a tmpfs; where none can be mounted, a 2 MB file size limit, which
    fails writes with EFBIG the way a full disk fails them with ENOSPC)."""
    disk = tmp_path / "disk"
    mounted = _tmpfs(disk)
    kb, _ = KnowledgeBase.init(disk / "knowledge-base")
    monkeypatch.setenv("KB_HOME", str(kb.root))
    limit = {} if mounted else {"preexec_fn": lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (SIZE, SIZE))}
    try:
        yield kb, limit
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_disk_filling_while_the_command_prints_cuts_the_log_and_nothing_hangs(full_disk: tuple) -> None:
    kb, limit = full_disk
    result = subprocess.run([sys.executable, "-m", "kb", "record", "--title", "loud", "--", sys.executable, "-c",
                             PRINTER], capture_output=True, text=True, timeout=120, **limit)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == LINES and result.stdout.endswith(f"line {LINES - 1:06d} {'x' * 40}\n")
    assert "done" in result.stderr and "kb: output.log stops after" in result.stderr
    entry = only_entry(kb)
    assert entry.status == "completed"
    assert "the rest reached the terminal only" in entry.data["command"]["output_cut"]
    log = (kb.attachments_path(entry) / "output.log").read_text()
    assert log.startswith("line 000000 ") and LINES * 48 > len(log) > 0


def test_kb_ends_when_the_command_does_though_a_background_child_holds_its_output(kb: KnowledgeBase) -> None:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "kb", "record", "--title", "daemon", "--", "sh", "-c",
                             "sleep 15 & echo started"], capture_output=True, text=True, timeout=60)  # fmt: skip
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert took < 10, took  # the child sleeps 15 s
    assert result.stdout == "started\n"
    entry = only_entry(kb)
    assert entry.data["command"]["descendants_running"] is True and entry.data["timings"]["wall_s"] < 5
    assert (kb.attachments_path(entry) / "output.log").read_text() == "started\n"


def test_output_left_in_the_pipe_when_the_command_ends_is_kept_whole(kb: KnowledgeBase) -> None:
    script = "import os\nos.write(1, b'y' * 60000 + b'\\n' * 3)\nos._exit(0)"
    result = subprocess.run([sys.executable, "-m", "kb", "record", "--title", "burst", "--", sys.executable, "-c",
                             script], capture_output=True, timeout=60)  # fmt: skip
    assert result.returncode == 0 and result.stdout == b"y" * 60000 + b"\n\n\n"
    entry = only_entry(kb)
    assert "descendants_running" not in entry.data["command"] and "output_cut" not in entry.data["command"]
    assert (kb.attachments_path(entry) / "output.log").read_bytes() == b"y" * 60000 + b"\n\n\n"
    assert os.environ.get("KB_HOME") == str(kb.root)


def test_a_full_disk_site_build_names_the_entry_it_stopped_at(kb: KnowledgeBase, full_disk: tuple) -> None:
    """The entries on a disk with room, the site on the full one."""
    disk, limit = full_disk
    out = disk.root.parent / "site"
    for number in range(6):
        body = f"notes {number} " + "word " * 100_000  # pages of 500 KB each, 3 MB in all
        write_entry(kb, f"2026-01-0{number + 1}-big-00000{number}", recorded=f"2026-01-0{number + 1}T00:00:00Z",
                    status="completed", body=body)  # fmt: skip
    result = subprocess.run([sys.executable, "-m", "kb", "--kb", str(kb.root), "site", "build", "--out", str(out)],
                            capture_output=True, text=True, timeout=300, **limit)  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"kb: error: site build stopped at the page of {kb.entries_path}/2026-01-0"), line
    assert line.endswith("No space left on device; free some disk space and build again") or "File too large" in line
    assert not list(out.rglob(".*.tmp"))


def test_a_clock_that_steps_back_during_a_run_is_noticed_and_the_end_never_precedes_the_start(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    import ingest.recorder
    from ingest.describe import RunInfo
    from kb.model.entry import parse_time, utc_now

    now = utc_now()
    readings = iter([now, now, now - timedelta(hours=1)])  # the entry, the start, then the end after NTP's step
    monkeypatch.setattr(ingest.recorder, "utc_now", lambda: next(readings, now - timedelta(hours=1)))
    with open(os.devnull, "wb") as quiet:
        recorded = ingest.recorder.record_command(
            kb, [sys.executable, "-c", "pass"], RunInfo(title="clock"), stdout=quiet
        )
    timings = recorded.entry.data["timings"]
    assert parse_time(timings["ended"]) >= parse_time(timings["started"])
    assert 0 <= timings["wall_s"] < 60
    (said,) = [p for p in recorded.entry.data["provenance"]["capture_problems"] if "clock" in p]
    assert said.startswith("the system clock stepped back 3600 s while the run ran: timings.ended is timings.started")


def test_an_entry_dated_in_the_future_is_flagged_by_check(kb: KnowledgeBase) -> None:
    from conftest import run_kb

    write_entry(kb, "2099-01-01-from-the-future-aaaaaa", recorded="2099-01-01T00:00:00Z", status="completed")
    write_entry(kb, "2026-01-01-of-today-bbbbbb", recorded="2026-01-01T00:00:00Z", status="completed")
    result = run_kb("check")
    assert result.returncode == 1
    assert (
        "2099-01-01-from-the-future-aaaaaa.md:7: recorded: dated in the future (2099-01-01T00:00:00Z): was the "
        "recording machine's clock wrong? correct the date" in result.stdout
    )
    assert "2 entries checked, 1 problem" in result.stderr


def test_a_run_that_writes_too_many_files_has_those_that_fit_listed_and_the_rest_counted(kb: KnowledgeBase) -> None:
    from conftest import run_kb

    writer = "import os\nfor n in range(10_050): open(os.path.join(os.environ['KB_RUN_DIR'], f'{n:05d}.txt'), 'w')"
    result = run_kb("record", "--", sys.executable, "-c", writer, timeout=300)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert len(entry.data["attachments"]) == 10_000
    (said,) = [p for p in entry.data["provenance"]["capture_problems"] if p.startswith("too many files")]
    assert said.startswith("too many files: 51 files past the first 10,000 in path order are not listed as attachments")
