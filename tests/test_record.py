"""`kb record -- <command>` on real processes: every way a run can end leaves a truthful entry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from conftest import json_data, only_entry, run_kb

from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

PY = sys.executable


def test_completed_run_captures_what_ran_and_on_what(kb: KnowledgeBase, tmp_path: Path) -> None:
    result = run_kb(
        "record",
        "--workload",
        "tiny-lm",
        "--backend",
        "cpu",
        "--mode",
        "eager",
        "--tag",
        "smoke",
        "--setting",
        "batch=8",
        "--setting",
        "torch_hint=2.10",
        "--metric",
        "tokens_per_s=5120tokens/s",
        "--note",
        "First try.",
        "--",
        PY,
        "-c",
        "print('hello from the run')",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from the run\n"  # passed through live, untouched
    entry = only_entry(kb)
    data = entry.data
    assert entry.status == "completed" and entry.kind == "run"
    assert entry.title == "tiny-lm cpu eager"
    assert data["workload"] == {"name": "tiny-lm"} and data["backend"] == "cpu" and data["tags"] == ["smoke"]
    assert data["settings"] == {"batch": 8, "torch_hint": "2.10"}
    assert data["metrics"]["tokens_per_s"] == {"value": 5120.0, "unit": "tokens/s"}
    assert data["command"]["argv"][1:] == ["-c", "print('hello from the run')"]
    assert data["command"]["cwd"] == str(tmp_path.resolve())
    assert data["command"]["exit_code"] == 0 and data["command"]["signal"] is None
    assert data["versions"]["torch"] == __import__("importlib.metadata").metadata.version("torch")
    assert (
        data["provenance"]["versions_from"].startswith("kb interpreter")
        or "command interpreter" in data["provenance"]["versions_from"]
    )
    assert data["hardware"]["cpu_threads"] == os.cpu_count()
    assert data["hardware"]["probes"]["nvidia-smi"] in ("absent", "ok") or data["hardware"]["probes"]["nvidia-smi"]
    assert data["timings"]["wall_s"] > 0 and data["timings"]["started"] <= data["timings"]["ended"]
    assert data["recorder"]["pid"] != os.getpid()
    assert entry.body.startswith("First try.\n")
    assert "hello from the run" in entry.body
    assert "## Output\n\nThe one line; the whole output is in [output.log]" in entry.body
    log = kb.attachments_path(entry) / "output.log"
    assert log.read_text() == "hello from the run\n"
    assert {"path": f"{entry.id}/output.log", "role": "output", "bytes": 19} in data["attachments"]
    assert f"recorded {entry.id} (completed)" in result.stderr


def test_failed_run_keeps_exit_code_and_stderr_tail(kb: KnowledgeBase) -> None:
    result = run_kb(
        "record", "--", PY, "-c", "import sys; print('partial'); sys.stderr.write('bad thing\\n'); sys.exit(3)"
    )
    assert result.returncode == 3
    entry = only_entry(kb)
    assert entry.status == "failed"
    assert entry.data["command"]["exit_code"] == 3
    assert entry.data["failure"] == {"message": "exit code 3", "class": "crash", "assigned": "auto"}
    assert "bad thing" in entry.body and "partial" in entry.body


def test_failure_class_comes_from_the_output(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--", PY, "-c", "import kb_no_such_module")
    assert result.returncode == 1
    failure = only_entry(kb).data["failure"]
    assert failure["class"] == "environment"
    assert failure["evidence"].startswith("output.log:")
    assert "No module named 'kb_no_such_module'" in failure["message"]


def test_command_killed_by_a_signal(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--", PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert result.returncode == 128 + signal.SIGKILL
    entry = only_entry(kb)
    assert entry.status == "killed"
    assert entry.data["command"]["signal"] == "SIGKILL"
    assert entry.data["failure"]["class"] == "crash"
    assert "out-of-memory killer" in entry.data["failure"]["message"]


def test_command_not_found_is_recorded(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--", "kb-no-such-command-xyz")
    assert result.returncode == 127
    entry = only_entry(kb)
    assert entry.status == "failed"
    assert entry.data["failure"]["class"] == "environment"
    assert entry.data["failure"]["message"] == "command not found: kb-no-such-command-xyz"


# SIGINT as a command that is not Python takes it: Python's handler only sets a flag, and one set just before
# time.sleep() begins is read when the sleep ends, a minute later (seen under load: kb had passed it on).
SLEEPER = "import signal as s, time; s.signal(s.SIGINT, s.SIG_DFL); print('ready', flush=True); time.sleep(60)"


def start_recording(*extra: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PY, "-m", "kb", "record", *extra, "--", PY, "-c", SLEEPER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n"  # the child runs: kb passed its output through live
    return proc


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_kb_is_forwarded_and_recorded(kb: KnowledgeBase, signum: int) -> None:
    proc = start_recording()
    os.kill(proc.pid, signum)
    _out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum
    entry = only_entry(kb)
    assert entry.status == "interrupted"
    assert entry.data["command"]["signal"] == signal.Signals(signum).name  # the child got it and died of it
    name = signal.Signals(signum).name
    assert entry.data["failure"]["class"] == "interrupted"
    assert entry.data["failure"]["message"] == f"{name} sent to kb record and passed on to the command"


def test_a_recording_suspended_and_resumed_still_passes_signals_on(kb: KnowledgeBase) -> None:
    # Ctrl-Z then `fg`: a stop longer than a second once broke kb's signal waiter (Python's sigtimedwait
    # returns garbage after an interrupted wait whose time ran out), and later signals were never passed on.
    proc = start_recording()
    command = psutil.Process(proc.pid).children()[0]
    os.kill(proc.pid, signal.SIGSTOP)
    command.suspend()
    time.sleep(1.5)
    command.resume()
    os.kill(proc.pid, signal.SIGCONT)
    os.kill(proc.pid, signal.SIGTERM)
    try:
        _out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        command.kill()  # the signal was never passed on
        proc.wait()
        raise
    assert "Exception in thread" not in err, err
    assert proc.returncode == 128 + signal.SIGTERM
    assert only_entry(kb).status == "interrupted"


def test_sigkill_of_kb_leaves_a_running_entry_that_later_reads_as_killed(kb: KnowledgeBase) -> None:
    proc = start_recording("--title", "doomed")
    child = psutil.Process(proc.pid).children()[0]
    entry_path = next(kb.entries_path.glob("*.md"))
    assert Entry.read(entry_path).status == "running"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    child.kill()
    child.wait(timeout=10)
    assert Entry.read(entry_path).status == "running"  # nothing finished it...

    listed = json_data(run_kb("ls", "--json").stdout)
    assert [(row["title"], row["status"]) for row in listed] == [("doomed", "killed")]  # ...until the next command
    entry = Entry.read(entry_path)
    assert entry.status == "killed"
    assert entry.data["failure"]["class"] == "crash"
    assert f"pid {proc.pid}" in entry.data["failure"]["message"]
    assert "ready" in entry.body  # the output written before the kill is kept


def test_a_live_recording_is_not_mistaken_for_a_dead_one(kb: KnowledgeBase) -> None:
    proc = start_recording("--title", "alive")
    try:
        listed = json_data(run_kb("ls", "--json").stdout)
        assert [(row["title"], row["status"]) for row in listed] == [("alive", "running")]
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)


def test_sixteen_concurrent_recordings_give_sixteen_entries(kb: KnowledgeBase) -> None:
    def record(index: int) -> subprocess.CompletedProcess:
        return run_kb(
            "record", "--title", "same title", "--setting", f"index={index}", "--", PY, "-c", f"print({index})"
        )

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(record, range(16)))
    assert [r.returncode for r in results] == [0] * 16
    problems: list = []
    entries = list(kb.iter_entries(problems))
    assert problems == []
    assert len({e.id for e in entries}) == 16
    assert sorted(e.data["settings"]["index"] for e in entries) == list(range(16))
    for entry in entries:
        assert entry.status == "completed"
        assert entry.body.count(f"\n{entry.data['settings']['index']}\n") == 1  # each kept its own output


def test_the_command_hands_results_over_through_the_run_folder(kb: KnowledgeBase) -> None:
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
        "from ingest import handover\n"
        "handover.metric('tokens_per_s', 123.5, 'tokens/s', better='higher')\n"
        "handover.set_field('timings.compile_s', 8.8)\n"
        "handover.set_field('id', 'hijack')\n"
        "handover.note('Padded every batch to 64 tokens.')\n"
        "open(handover.run_dir() / 'trace.json', 'w').write('{}')\n"
    )
    shell = """echo '{"event": "metric", "name": "loss", "value": 1.9}' >> "$KB_RUN_DIR/events.jsonl" """
    assert run_kb("record", "--", PY, "-c", script).returncode == 0
    assert run_kb("record", "--", "bash", "-c", shell).returncode == 0
    by_program = {e.data["command"]["argv"][0]: e for e in kb.iter_entries()}
    first, second = by_program[PY], by_program["bash"]
    assert first.data["metrics"]["tokens_per_s"] == {"value": 123.5, "unit": "tokens/s", "better": "higher"}
    assert first.data["timings"]["compile_s"] == 8.8
    assert "Padded every batch to 64 tokens." in first.body
    assert "field 'id' is set by the recorder, not by the run" in first.body
    roles = {a["path"].split("/", 1)[1]: a["role"] for a in first.data["attachments"]}
    assert roles == {"output.log": "output", "run/events.jsonl": "events", "run/trace.json": "file"}
    assert second.data["metrics"]["loss"] == {"value": 1.9}


def test_options_that_need_a_finished_run_are_refused_with_a_command(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--status", "failed", "--", "true")
    assert result.returncode == 1
    assert result.stderr == (
        "kb: error: --status describe a run that already happened; drop them, or drop the "
        "command to record after the fact\n"
    )
    assert list(kb.entries_path.iterdir()) == []


def test_no_knowledge_base_is_a_clear_error(tmp_path: Path) -> None:
    result = run_kb("record", "--", "true", env={"KB_HOME": ""}, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"kb: error: no knowledge base here: no kb.toml in {tmp_path.resolve()} or above; run "
        "'kb init' to make one, or point --kb or $KB_HOME at one\n"
    )


def test_bad_options_are_clear_errors(kb: KnowledgeBase) -> None:
    unknown = run_kb("record", "--bogus", "--", "true")
    assert unknown.returncode == 2 and "No such option: --bogus" in unknown.stderr
    assert run_kb("record", "--metric", "speed=fast", "--", "true").stderr == (
        "kb: error: --metric 'speed=fast': expected name=number[unit], e.g. --metric tokens_per_s=5120tokens/s\n"
    )
    assert run_kb("record", "--title", "x", "--status", "finished", "--no-edit").stderr == (
        "kb: error: --status 'finished' is not one of: completed, failed, interrupted, killed\n"
    )
    assert run_kb("record", "--reference", "2026-01-01-nothing-000000", "--", "true").stderr.startswith(
        "kb: error: no entry '2026-01-01-nothing-000000'"
    )
    assert list(kb.entries_path.iterdir()) == []


def test_recorder_overhead_leaves_the_output_stream_intact(kb: KnowledgeBase) -> None:
    # Large, fast output with long lines and no trailing newline: every byte passes through and is logged.
    script = "import sys; sys.stdout.write('x' * 200000 + '\\n' + 'line\\n' * 5000 + 'end')"
    result = run_kb("record", "--", PY, "-c", script)
    assert result.stdout == "x" * 200000 + "\n" + "line\n" * 5000 + "end"
    entry = only_entry(kb)
    assert (kb.attachments_path(entry) / "output.log").read_text() == result.stdout + "\n"
    assert "The last 40 of 5002 lines" in entry.body


def test_a_file_the_run_names_in_no_utf_8_is_kept_unlisted_and_the_recording_ends(kb: KnowledgeBase) -> None:
    # The run may name its files in any bytes; an entry cannot hold such a name. kb record exited 1 and left the
    # entry running for good.
    writer = "import os; open(os.path.join(os.fsencode(os.environ['KB_RUN_DIR']), b'caf\\xe9.txt'), 'w').write('x')"
    recorded = run_kb("record", "--", PY, "-c", writer)
    assert recorded.returncode == 0, recorded.stderr
    entry = only_entry(kb)
    assert entry.status == "completed"
    assert entry.data["provenance"]["capture_problems"] == [
        f"{entry.id}/run/caf\\xe9.txt: not listed as an attachment, its name is not UTF-8 text"
    ]
    assert os.listdir(os.fsencode(kb.attachments_path(entry) / "run")) == [b"caf\xe9.txt"]
