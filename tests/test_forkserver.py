"""While `kb watch` runs, the commands that only read are run by its fork server (kb/forkserver.py): a real
watcher, real Unix sockets, real forks and signals. What a person sees is the same as without it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb.forkserver import socket_path
from kb.store import KnowledgeBase
from tests.conftest import run_kb, run_kb_in_terminal, watching, write_entry

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kb watch needs Linux's inotify")

# `kb ARGS` through the server only: the exit status it gave, or None where the program would run it itself.
PROBE = (
    "import sys; from kb import forkserver; {patch}code = forkserver.answer(sys.argv[1:], []); "
    "print(f'served={{code}}', file=sys.stderr)"
)
LOCAL = {"KB_LOCAL": "1"}


def _served(*args: str, patch: str = "") -> tuple[str | None, subprocess.CompletedProcess]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(patch=patch), *args], capture_output=True, text=True, timeout=60
    )
    last = result.stderr.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("served="), result.stderr
    return (None if last == "served=None" else last.removeprefix("served=")), result


def _wait_for(check, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.01)


@contextlib.contextmanager
def _serving(kb: KnowledgeBase) -> Iterator[subprocess.Popen]:
    """`kb watch` with its fork server taking commands."""
    with watching() as watcher:
        _wait_for(socket_path(kb.cache_path).exists)
        yield watcher


@pytest.fixture
def entries(kb: KnowledgeBase) -> KnowledgeBase:
    for n, (backend, status) in enumerate([("cpu", "completed"), ("cuda", "completed"), ("neuron", "failed")], 1):
        write_entry(kb, f"2026-01-0{n}-mango-{n:06d}", f"Mango on {backend}", recorded=f"2026-01-0{n}T10:00:00Z",
                    status=status, backend=backend, mode="eager", workload={"name": "mango"},
                    metrics={"tokens_per_s": {"value": 1000.0 * n, "unit": "tokens/s"}})  # fmt: skip
    return kb


def _children(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{name}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(name))
    return found


def test_the_server_answers_as_the_program_would(entries: KnowledgeBase) -> None:
    commands = [
        ("search", "mango"), ("search", "complie"), ("ls",), ("ls", "--json"), ("ls", "--backend", "cuda"),
        ("board",), ("board", "--json"), ("show", "2026-01-02-mango-000002"), ("compare", "--workload", "mango"),
        ("show", "no-such-entry"), ("ls", "--no-such-option"), ("search", "--help"),
    ]  # fmt: skip
    with _serving(entries):
        for args in commands:
            assert _served(*args)[0] is not None, args  # the server takes it
            served, local = run_kb(*args), run_kb(*args, env=LOCAL)
            assert (served.returncode, served.stdout, served.stderr) == (local.returncode, local.stdout, local.stderr)
        # KB_DEBUG=1: the error's traceback, as Python prints one for an error nothing caught.
        assert _served("show", "no-such-entry", patch="import os; os.environ['KB_DEBUG'] = '1'; ")[0] == "1"
        debug = run_kb("show", "no-such-entry", env={"KB_DEBUG": "1"})
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "EntryNotFound" in debug.stderr
        # In a terminal: the copy writes to the program's own terminal, so it gets a table, as the program would.
        assert run_kb_in_terminal("ls") == run_kb_in_terminal("ls", env=LOCAL)
        # A command that writes, or one a server of another kb (or another version) would run, is not taken.
        assert _served("add", "--help")[0] is None
        assert _served("ls", patch="forkserver.stamp = lambda: 'another kb'; ")[0] is None
        assert _served("ls", patch="import os; os.environ['KB_LOCAL'] = '1'; ")[0] is None


@contextlib.contextmanager
def _held(kb: KnowledgeBase) -> Iterator[tuple[subprocess.Popen, int]]:
    """A served `kb ls` and the copy running it, held in the command's wait for a stopped watcher (up to 2 s):
    time to signal them."""
    with _serving(kb) as watcher:
        (server,) = _children(watcher.pid)
        watcher.send_signal(signal.SIGSTOP)
        try:
            # In a process group of its own, as a shell starts a job: the kernel drops Ctrl-Z in a group no shell
            # could continue (one whose parents are all in other sessions, as a test runner's may be).
            program = subprocess.Popen([sys.executable, "-m", "kb", "ls"], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, preexec_fn=os.setpgrp)  # fmt: skip
            _wait_for(lambda: _children(server))
            (copy,) = _children(server)
            yield program, copy
        finally:
            watcher.send_signal(signal.SIGCONT)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)])
def test_signals_reach_the_command_the_server_runs(entries: KnowledgeBase, signum: int, status: int) -> None:
    with _held(entries) as (program, _):
        program.send_signal(signum)
        out, err = program.communicate(timeout=30)
    # As the program itself ends: at Ctrl-C with Typer's exit code for it, at SIGTERM killed by it; not after the
    # watcher's wait and a listing.
    assert (program.returncode, out) == (status, ""), err
    assert err in ("", "kb: interrupted\n")


def test_ctrl_z_stops_the_command_with_the_program_and_a_killed_program_takes_it_along(entries: KnowledgeBase) -> None:
    with _held(entries) as (program, copy):
        program.send_signal(signal.SIGTSTP)
        _wait_for(lambda: _state(copy) == "T" and _state(program.pid) == "T")
        program.send_signal(signal.SIGCONT)
        _wait_for(lambda: _state(copy) != "T")
        program.kill()  # no chance to pass anything on: the server sees its end of the socket close
        began = time.monotonic()
        _wait_for(lambda: not os.path.exists(f"/proc/{copy}") or _state(copy) == "Z")
        assert time.monotonic() - began < 1.5  # not the rest of the 2 s wait and the listing


def test_a_copy_killed_outright_takes_its_program_along(entries: KnowledgeBase) -> None:
    with _held(entries) as (program, copy):
        os.kill(copy, signal.SIGKILL)  # the kernel's out-of-memory killer, say
        program.communicate(timeout=30)
    assert program.returncode == -signal.SIGKILL


def test_replies_are_read_line_by_line_however_they_arrive() -> None:
    # A copy can end before its program reads its pid: both replies then wait in one read.
    from kb.forkserver import _line

    server, program = socket.socketpair()
    with server, program:
        server.sendall(b"pid 123\nexit 0\n")
        replies = program.makefile("rb")
        assert (_line(replies), _line(replies)) == (b"pid 123", b"exit 0")


def test_a_request_that_is_not_one_leaves_the_server_running(entries: KnowledgeBase) -> None:
    with _serving(entries):
        path = socket_path(entries.cache_path)
        stray = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            stray.connect(f"/proc/self/fd/{folder}/{path.name}")
            socket.send_fds(stray, [b"[]\n"], [0, 1, 2])
            assert stray.recv(16) == b"no\n"
        finally:
            os.close(folder)
            stray.close()
        assert _served("ls")[0] == "0"


def test_a_full_disk_is_reported_as_by_the_program(entries: KnowledgeBase) -> None:
    with _serving(entries):
        ended = []
        for env in ({}, LOCAL):
            with open("/dev/full", "w") as full:
                result = subprocess.run([sys.executable, "-m", "kb", "ls"], stdout=full, stderr=subprocess.PIPE,
                                        text=True, env={**os.environ, **env}, timeout=60)  # fmt: skip
            ended.append((result.returncode, result.stderr))
    assert ended[0] == ended[1] and ended[0][0] != 0, ended


def test_without_the_watch_the_program_runs_its_command_itself(entries: KnowledgeBase, tmp_path: Path) -> None:
    path = socket_path(entries.cache_path)
    with _serving(entries) as watcher:
        watcher.send_signal(signal.SIGINT)
        watcher.communicate(timeout=30)
        _wait_for(lambda: not path.exists())  # the server takes no more commands once the watch ends
    assert _served("ls")[0] is None
    # A socket nobody listens on (a server killed outright): not waited for.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        stale.bind(f"/proc/self/fd/{folder}/{path.name}")  # a socket's address is short, the test's folder is not
    finally:
        os.close(folder)
        stale.close()
    assert _served("ls")[0] is None
    result = run_kb("ls", "--json")
    assert result.returncode == 0 and "2026-01-03-mango-000003" in result.stdout
