"""Every test gets its own knowledge base in a temporary folder, named by $KB_HOME."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kb.entry import Entry, new_entry
from kb.home import ENV_HOME
from kb.store import KnowledgeBase

REPO = Path(__file__).resolve().parent.parent

# TorchTPU (the test extra installs it) loads itself at every `import torch`, here and in every child process: its
# import-time warnings and log lines would reach output that tests compare. Its own tests turn it back on.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

# A shell that starts a job in the background without job control makes it ignore SIGINT, and an ignored
# signal is inherited by every child: the tests that send Ctrl-C to commands need it handled as usual.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KnowledgeBase:
    base, _ = KnowledgeBase.init(tmp_path / "knowledge-base")
    monkeypatch.chdir(tmp_path)  # commands run outside any git work tree unless a test makes one
    monkeypatch.setenv(ENV_HOME, str(base.root))
    monkeypatch.delenv("KB_RUN_DIR", raising=False)
    return base


def run_kb(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """The real `kb` command in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "kb", *args],
        input=input,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def run_kb_in_terminal(
    *args: str, env: dict[str, str] | None = None, answer: Callable[[bytes], bytes | None] | None = None
) -> tuple[int, bytes]:
    """The real `kb` in a pseudo-terminal (a person at a terminal): its exit code and all it printed.
    `answer` sees what was printed since its last reply (a prompt can arrive in pieces, and the terminal's
    echo of a reply in pieces too) and may return keys to type in reply."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-m", "kb", *args], {**os.environ, **(env or {})})
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
    process = subprocess.Popen([sys.executable, "-m", "kb", "watch"], stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert "watching" in line, line
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
