"""Commands answered by a warm process while `kb watch` runs: the start-up of Python, Typer and kb paid once.

Most of a short command (`kb search`, `kb ls`, `kb board`) is starting: the interpreter, Typer and kb's modules,
0.15 to 0.25 s on every run, where the answer itself takes a few hundredths of a second with `kb watch`. So
`kb watch` starts a fork server beside it (as Python's multiprocessing does, and editors' language servers):
a process that has imported the command line and waits on a Unix socket in `.kb/watch/`. The `kb` program,
before it imports anything, asks it to run its command; the server forks a copy of itself, which takes the
program's standard input, output and error (the descriptors themselves, passed over the socket: a terminal
stays a terminal), its arguments, environment and working folder, runs the command exactly as the program
would, and exits; the program exits with the copy's status. Ctrl-C and other signals the program gets are
passed on to the copy.

The program runs the command itself, as before, whenever the server cannot answer: no `kb watch`, a command
not served (one that writes entries or reads standard input), another user, a kb or Python other than the
server's (a new version installed, a module edited since it started), or KB_LOCAL=1 in the environment.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING: the program asks the server before it imports typing
if TYPE_CHECKING:
    import io
    import socket
    import subprocess
    from collections.abc import Callable, Iterator

# Commands that only read the knowledge base and never standard input.
SERVED = frozenset({"search", "ls", "show", "board", "compare", "trend"})
SOCKET = "commands.sock"  # in .kb/watch/, beside the watcher's journal
LOG = "commands.log"  # the server's own errors, if it has any
ENV_LOCAL = "KB_LOCAL"  # set (to anything but empty): the program always runs its command itself
CONNECT_S = 1.0  # a server that does not take the command within this long is not used
_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def socket_path(cache: Path) -> Path:
    return cache / "watch" / SOCKET


def answer(args: list[str], noted: list[int]) -> int | None:
    """Run `kb ARGS` in the server, if one can take it: its exit status; None when the program must run it.
    `noted`: the signals the program got meanwhile, passed on once the command runs."""
    from kb.launch import command_of

    if os.environ.get(ENV_LOCAL) or command_of(args, tuple(SERVED)) is None:
        return None
    path = _socket_of(args)
    if path is None or not path.exists():
        return None
    import json
    import socket

    streams = (sys.stdin, sys.stdout, sys.stderr)
    if None in streams:  # one of them was closed when the program started
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        request = {
            "args": args, "cwd": os.getcwd(), "env": dict(os.environ), "stamp": stamp(), "program": _program(),
            "umask": _umask(), "streams": [[stream.encoding, stream.errors] for stream in streams],
        }  # fmt: skip
        sock.settimeout(CONNECT_S)
        with _short(path.parent) as folder:
            sock.connect(f"{folder}/{path.name}")
        if _peer_uid(sock) != os.getuid():  # never the environment, secrets and all, to another user's process
            raise ConnectionRefusedError(path)
        socket.send_fds(sock, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        reply = _line(sock)
        if not reply.startswith(b"pid "):  # refused: another kb, or another user
            return None
        pid = int(reply[4:])
        sock.sendall(b"g")  # the copy starts only now: a program that gave up before never runs the command twice
    except (OSError, ValueError):
        sock.close()
        return None
    return _follow(sock, pid, noted)


def _follow(sock: socket.socket, pid: int, noted: list[int]) -> int:
    """Pass the program's signals on to the copy running its command until its status comes."""
    import signal

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for name in _FORWARDED:
        signal.signal(getattr(signal, name), forward)
    for signum in noted:
        forward(signum, None)
    sock.settimeout(None)
    try:
        reply = _line(sock)
    except OSError:
        reply = b""
    if reply.startswith(b"exit "):
        return int(reply[5:])
    print("kb: error: kb watch stopped before the command ended; run it again", file=sys.stderr)
    return 1


def _line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(64)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data[:-1]


def _umask() -> int:
    mask = os.umask(0o077)  # reading it means setting it
    os.umask(mask)
    return mask


def _program() -> list[str | None]:
    """What Click names the program after in its messages (`kb`, `python -m kb`): the script and its package."""
    return [sys.argv[0], getattr(sys.modules["__main__"], "__package__", None)]


@contextlib.contextmanager
def _short(folder: Path) -> Iterator[str]:
    """A short name of `folder`: a socket's address holds at most 107 bytes, a knowledge base's path may not."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def _peer_uid(sock: socket.socket) -> int:
    """The user of the process at the other end of a Unix socket (as the kernel says it)."""
    import socket
    import struct

    return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]


def _socket_of(args: list[str]) -> Path | None:
    """The server socket of the knowledge base the command would use, if there is one."""
    from kb.errors import KbNotFound
    from kb.home import CACHE, find_root

    explicit = None
    rest = iter(args)
    for arg in rest:  # kb's own options come before the command: `kb --kb PATH search ...`
        if arg == "--kb":
            explicit = next(rest, None)
        elif arg.startswith("--kb="):
            explicit = arg[5:]
        else:
            break
    try:
        return socket_path(find_root(explicit) / CACHE)
    except (KbNotFound, OSError):
        return None


def stamp() -> str:
    """What makes two processes the same kb: the interpreter, kb's folder and version, and its modules' times."""
    import kb

    folder = os.path.dirname(kb.__file__)
    newest = 0
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(top, name)).st_mtime_ns)
    return f"{sys.executable}|{folder}|{kb.__version__}|{newest}"


# The server side: started by `kb watch`, stopped when the watch ends (its standard input closes).


def start(cache: Path) -> subprocess.Popen | None:
    """Start the server of the knowledge base whose cache folder is `cache`; it stops when `stop` closes its pipe
    (or the watch ends any other way). None if it cannot start: commands then run themselves."""
    import subprocess

    path = socket_path(cache)
    try:
        # Its own errors go to a log beside the socket: on the watch's standard error they would keep it open
        # (to whoever reads it) for as long as the server finishes the commands it runs.
        with open(path.with_name(LOG), "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "kb.forkserver", str(path)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=log, start_new_session=True,  # not the watch's Ctrl-C
            )  # fmt: skip
    except OSError:
        return None


def stop(server: subprocess.Popen) -> None:
    """Take no more commands; the server ends once the commands it runs have ended."""
    with contextlib.suppress(OSError):
        server.stdin.close()


def serve(path: Path) -> None:
    """Take commands on the socket at `path` until standard input (the watch's pipe) closes."""
    import selectors
    import signal
    import socket

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the watch's own Ctrl-C ends it through the pipe
    command = _preload()
    own = stamp()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _short(path.parent) as folder:
            listener.bind(f"{folder}/{temporary.name}")
        os.chmod(temporary, 0o600)
        listener.listen(64)
        os.replace(temporary, path)  # whole: a program finds no socket, or one that answers
        inode = os.stat(path).st_ino
    except OSError:
        _remove(temporary)
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the loop to collect the copies that ended
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    running: dict[int, socket.socket] = {}
    listening = True
    while listening or running:
        for key, _ in selector.select():
            if key.fileobj is listener:
                own_fds = (listener.fileno(), wake_r, wake_w, sys.stdin.fileno(), selector.fileno())
                _take(listener, own, running, own_fds, command)
            elif key.fileobj == wake_r:
                os.read(wake_r, 4096)
            elif listening:  # the watch ended: take no more, finish what runs
                listening = False
                selector.unregister(listener)
                selector.unregister(sys.stdin.fileno())
                listener.close()
                with contextlib.suppress(OSError):
                    if os.stat(path).st_ino == inode:  # not a newer watch's
                        _remove(path)
        _collect(running)


def _preload() -> Callable[[], object]:
    """What the served commands import, so that each copy starts with it; the command line as Click runs it."""
    import gc

    import typer

    import kb.answers.board
    import kb.answers.compare
    import kb.answers.trend
    import kb.cli  # every command registered: the copy runs whichever it is asked
    import kb.commands.common
    import kb.index.prepare
    import kb.index.query
    import kb.plain
    import kb.render

    command = typer.main.get_command(kb.cli.app)  # Typer reads every command's options here, once
    gc.freeze()  # what is loaded stays out of the copies' collections, which would touch (and so copy) every page
    return command


def _take(
    listener: socket.socket,
    own: str,
    running: dict[int, socket.socket],
    own_fds: tuple[int, ...],
    command: Callable[[], object],
) -> None:
    import json
    import socket

    conn, _ = listener.accept()
    received: list[int] = []
    try:
        conn.settimeout(CONNECT_S)
        uid = _peer_uid(conn)
        data, received, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while not data.endswith(b"\n"):
            more = conn.recv(1 << 20)
            if not more:
                raise ConnectionError("closed")
            data += more
        request = json.loads(data)
        if uid != os.getuid() or request.get("stamp") != own or len(received) != 3:
            conn.sendall(b"no\n")
            raise ConnectionError("refused")
        child = os.fork()
    except (OSError, ValueError):
        conn.close()
        for fd in received:
            os.close(fd)
        return
    if child == 0:  # the copy keeps none of the server's descriptors, nor those of the other programs' copies
        _run(conn, received, request, (*own_fds, *(other.fileno() for other in running.values())), command)
    for fd in received:
        os.close(fd)
    running[child] = conn


def _collect(running: dict[int, socket.socket]) -> None:
    """Tell each program whose copy ended how it ended, as a shell would say it."""
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
        conn.close()


def _run(
    conn: socket.socket, fds: list[int], request: dict, inherited: tuple[int, ...], command: Callable[[], object]
) -> None:
    """In the copy: become the program that asked, run its command, and exit with its status."""
    import signal

    code = 1
    noted: list[int] = []
    try:
        signal.set_wakeup_fd(-1)
        for name in ("SIGCHLD", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        # Until the command runs, a Ctrl-C is noted and acted on then, as the program does while it starts.
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
        # Not in the terminal's foreground: with `stty tostop`, writing to it would stop the copy.
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        for fd in inherited:
            os.close(fd)
        conn.settimeout(CONNECT_S)
        conn.sendall(f"pid {os.getpid()}\n".encode())
        if conn.recv(1) != b"g":  # the program gave up: it runs the command itself
            os._exit(0)
        conn.close()
        _become(fds, request)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if noted:
            raise KeyboardInterrupt
        from kb.cli import main

        try:
            main(command)
            code = 0
        except SystemExit as done:
            code = _exit_code(done.code)
    except KeyboardInterrupt:
        print("kb: interrupted", file=sys.stderr)
        code = 130
    except Exception:  # as Python ends a program on an error nothing caught: the traceback (KB_DEBUG=1)
        sys.excepthook(*sys.exc_info())
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _become(fds: list[int], request: dict) -> None:
    """Take the program's standard streams, environment, folder, file mode mask and name."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    # As Python makes them at start: a terminal's lines are written as they end, standard error's always.
    (in_encoding, in_errors), (out_encoding, out_errors), (err_encoding, err_errors) = request["streams"]
    sys.stdin = _text(0, "rb", in_encoding, in_errors, os.isatty(0))
    sys.stdout = _text(1, "wb", out_encoding, out_errors, os.isatty(1))
    sys.stderr = _text(2, "wb", err_encoding, err_errors, True)
    script, sys.modules["__main__"].__package__ = request["program"]
    sys.argv = [script, *request["args"]]


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _text(fd: int, mode: str, encoding: str, errors: str, line_buffering: bool) -> io.TextIOWrapper:
    import io

    binary = open(fd, mode, closefd=False)  # noqa: SIM115 (standard streams live as long as the process)
    return io.TextIOWrapper(binary, encoding=encoding, errors=errors, line_buffering=line_buffering)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
