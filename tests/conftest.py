"""Every test gets its own knowledge base in a temporary folder, named by $KB_HOME."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

import pytest

from kb.model.entry import Entry, new_entry
from kb.store.home import ENV_HOME
from kb.store.knowledge_base import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent

# TorchTPU (the test extra installs it) loads itself at every `import torch`, here and in every child process: its
# import-time warnings and log lines would reach output that tests compare. Its own tests turn it back on.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

# A shell that starts a job in the background without job control makes it ignore SIGINT, and an ignored
# signal is inherited by every child: the tests that send Ctrl-C to commands need it handled as usual.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The suite's tiers by file (pyproject.toml describes the markers); a test using the browser fixtures is marked
# browser wherever it is.
TIERS: dict[str, tuple[str, ...]] = {
    "test_bench_peers.py": ("slow",),
    "test_ci_recipe.py": ("torch", "slow"),
    "test_compile_evidence.py": ("torch", "slow"),
    "test_compile_run.py": ("torch", "slow"),
    "test_device.py": ("torch",),
    "test_device_use.py": ("torch", "slow", "backends"),
    "test_fallbacks.py": ("torch", "slow", "backends"),
    "test_faults_kill.py": ("slow",),
    "test_faults_load.py": ("slow",),
    "test_hf.py": ("torch", "slow"),
    "test_ingest_compile_trace.py": ("torch", "slow"),
    "test_ingest_profile.py": ("torch",),
    "test_instrument.py": ("torch", "slow"),
    "test_kbdev_run.py": ("torch", "slow", "backends"),
    "test_lightning_accelerate.py": ("torch", "slow"),
    "test_signatures.py": ("torch",),
    "test_start.py": ("torch", "slow"),
}
BROWSER_FIXTURES = frozenset({"browser", "tab"})
SLOW_FIXTURES = frozenset({"real_logs"})  # tests/test_signatures.py: failure logs of real PyTorch runs, made once


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in TIERS.get(item.path.name, ()):
            item.add_marker(marker)
        fixtures = set(getattr(item, "fixturenames", ()))
        if BROWSER_FIXTURES & fixtures:
            item.add_marker("browser")
        if SLOW_FIXTURES & fixtures:
            item.add_marker("slow")


class Clock:
    """The time kb reads (kb.model.entry.utc_now) for commands run in this process, moved by the test: entries are timed
    to the second, so a test that needs one entry a second after another ticks the clock rather than sleeping. Each
    reading moves it on a millisecond, as time does between two commands."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc).replace(microsecond=0)

    def read(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def tick(self, seconds: float = 1.0) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    import kb.model.entry

    moved = Clock()

    class Moved(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            now = moved.read()
            return now.astimezone(tz) if tz else now.replace(tzinfo=None)

    monkeypatch.setattr(kb.model.entry, "datetime", Moved)
    return moved


@pytest.fixture(autouse=True)
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KnowledgeBase:
    base, _ = KnowledgeBase.init(tmp_path / "knowledge-base")
    monkeypatch.chdir(tmp_path)  # commands run outside any git work tree unless a test makes one
    monkeypatch.setenv(ENV_HOME, str(base.root))
    monkeypatch.delenv("KB_RUN_DIR", raising=False)
    return base


# What needs a `kb` process of its own: commands that run another program (record, rerun), watch or serve,
# variables Python or the C library read only as a process starts, and a call from a thread (commands at once are
# processes at once; a call in this process swaps its standard streams and environment for the call).
PROCESS_COMMANDS = frozenset({"record", "rerun", "watch", "serve"})
PROCESS_VARIABLES = ("PYTHON", "LANG", "LC_", "TZ")


def run_kb(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """`kb ARGS` as a person runs it: its exit code and what it printed. Run in this process (as Typer's CliRunner
    does: its own standard streams, environment and folder for the call) unless it needs a process of its own."""
    from kb.launch import command_named

    named = [arg for arg in args if not arg.startswith("-")]
    needs_process = (
        command_named(list(args)) in PROCESS_COMMANDS
        or named[:2] == ["site", "serve"]
        or any(name.startswith(PROCESS_VARIABLES) for name in env or {})
        or threading.current_thread() is not threading.main_thread()
    )
    if needs_process:
        return run_kb_process(*args, input=input, env=env, cwd=cwd, timeout=timeout)
    return _run_kb_here(list(args), input=input, env=env, cwd=cwd)


# `python -m kb`, without the working folder on sys.path (-P): a test's folder may hold a knowledge base named kb/.
KB_COMMAND = [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "kb"]


def run_kb_process(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """The real `kb` command in a fresh process: for what is about processes (exit statuses, signals, start-up)."""
    return subprocess.run(
        [*KB_COMMAND, *args],
        input=input,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def _run_kb_here(
    args: list[str], *, input: str | None, env: dict[str, str] | None, cwd: Path | None
) -> subprocess.CompletedProcess:
    import traceback

    from typer.testing import CliRunner

    from kb.cli import main

    folder = os.getcwd()
    with CliRunner().isolation(input=input, env=env) as (stdout, stderr, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            main(args, prog_name="python -m kb")
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
        except Exception:  # as Python ends a process on an uncaught exception
            traceback.print_exc()
            code = 1
        finally:
            os.chdir(folder)
            sys.stdout.flush()
            sys.stderr.flush()
        out = stdout.getvalue().decode("utf-8", "replace")
        err = stderr.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["kb", *args], code, out, err)


def run_kb_in_terminal(
    *args: str, env: dict[str, str] | None = None, answer: Callable[[bytes], bytes | None] | None = None
) -> tuple[int, bytes]:
    """The real `kb` in a pseudo-terminal (a person at a terminal): its exit code and all it printed.
    `answer` sees what was printed since its last reply (a prompt can arrive in pieces, and the terminal's
    echo of a reply in pieces too) and may return keys to type in reply."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [*KB_COMMAND, *args], {**os.environ, **(env or {})})
    output = pending = b""
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
        pending += chunk
        reply = answer(pending) if answer else None
        if reply:
            os.write(fd, reply)
            pending = b""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output


def json_data(stdout: str, command: str | None = None) -> Any:
    """The answer of a `--json` command: the envelope every one prints is checked, and its `data` returned."""
    envelope = json.loads(stdout)
    assert list(envelope) == ["kb", "command", "data"] and envelope["kb"] == 1, stdout[:500]
    assert command is None or envelope["command"] == command, envelope["command"]
    return envelope["data"]


def only_entry(kb: KnowledgeBase) -> Entry:
    """The one entry a test made; every entry file must read cleanly."""
    problems: list = []
    entries = list(kb.iter_entries(problems))
    assert problems == []
    assert len(entries) == 1, [e.id for e in entries]
    return entries[0]


def write_entry(kb: KnowledgeBase, entry_id: str, title: str | None = None, body: str = "", **fields) -> Path:
    """A hand-written entry file (for what no run here can produce): `recorded` is required, kind defaults to run."""
    entry = new_entry(entry_id, title or entry_id, fields.pop("kind", "run"), recorded=fields.pop("recorded"), **fields)
    entry.body = body
    path = kb.entries_path / f"{entry_id}.md"
    path.write_text(entry.serialise())
    return path


@contextlib.contextmanager
def watching() -> Iterator[subprocess.Popen]:
    """`kb watch` running on the test's knowledge base, past its first sync; stopped with Ctrl-C after."""
    process = subprocess.Popen([*KB_COMMAND, "watch"], stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert "watching" in line, line
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def git(repo: Path, *args: str) -> str:
    """A git command in `repo` as a test's own committer (no signing, whatever the machine's configuration says):
    its stdout, stripped."""
    ran = subprocess.run(
        ["git", "-c", "user.name=kb test", "-c", "user.email=kb@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return ran.stdout.strip()
