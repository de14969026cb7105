"""Commands answered by a warm process while `kb watch` runs: the start-up of Python, Typer and kb paid once.

Most of a short command (`kb search`, `kb ls`, `kb board`) is starting: the interpreter, Typer and kb's modules,
0.1 to 0.25 s on every run, where the answer itself takes a few hundredths of a second with `kb watch`. So
`kb watch` starts a fork server beside it (as Python's multiprocessing does): a process that has imported the
command line and waits on a Unix socket in `.kb/watch/`. The `kb` program, before it imports anything else,
asks it to run its command; the server forks a copy of itself, which takes the program's standard input,
output and error (the descriptors themselves, passed over the socket: a terminal stays a terminal), its
arguments, environment, working folder and file mode mask, runs the command as the program would, and exits.
The program exits as the copy did (with its status, or by its signal), passes its signals on to the copy, and
stops and continues it with itself (Ctrl-Z, fg); a copy whose program is gone is killed.

The program runs the command itself, as before, whenever the server cannot take it: no `kb watch`, a command
not served (one that writes, or asks questions), another user, a kb, Python or installed package other than the
server's (a new version installed, a module edited since it started), or KB_LOCAL=1 in the environment. What
Python reads only as it starts (PYTHON* variables such as PYTHONPATH or PYTHONWARNINGS, the locale) is the
server's; the stream encodings and buffering, and the time zone, are the program's.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING: the program asks the server before it imports typing
if TYPE_CHECKING:
    import io
    import selectors
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


# The program's side.


def answer(args: list[str], noted: list[int]) -> int | None:
    """Run `kb ARGS` in the server, if one can take it: its exit status; None when the program must run it.
    `noted`: the signals the program got meanwhile, passed on once the command runs."""
    from kb.launch import split

    explicit, command = split(args)
    if os.environ.get(ENV_LOCAL) or command not in SERVED:
        return None
    path = _socket_of(explicit)
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if path is None or not path.exists() or None in streams:  # None: a stream closed when the program started
        return None
    import json
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        request = {
            "args": args, "cwd": os.getcwd(), "env": dict(os.environ), "stamp": stamp(), "program": _program(),
            "umask": _umask(), "streams": [[s.encoding, s.errors, s.line_buffering, s.write_through] for s in streams],
        }  # fmt: skip
        sock.settimeout(CONNECT_S)
        with _short(path.parent) as folder:
            sock.connect(f"{folder}/{path.name}")
        if _peer_uid(sock) != os.getuid():  # never the environment, secrets and all, to another user's process
            return None
        socket.send_fds(sock, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        replies = sock.makefile("rb")  # line by line: "pid" and "exit" may come in one read
        if _line(replies) != b"ok":  # refused: another kb, another user
            return None
        sock.settimeout(None)
    except (OSError, ValueError, AttributeError):  # AttributeError: a stream replaced by something else
        sock.close()
        return None
    import signal

    # Held from here until they can be passed on: the copy may start before its pid is known here.
    held = {signal.SIGTSTP, signal.SIGCONT, *(getattr(signal, name) for name in _FORWARDED)}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        # The server forks only once it has this: a program that gave up before never has its command run twice,
        # and one too slow for the server (which then closes) runs it itself.
        sock.sendall(b"g")
        reply = _line(replies)
        pid = int(reply.removeprefix(b"pid ")) if reply.startswith(b"pid ") else None
    except (OSError, ValueError):
        pid = None
    if pid is None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        sock.close()
        return None
    return _follow(replies, pid, noted, held)


def _follow(replies: io.BufferedReader, pid: int, noted: list[int], held: set[int]) -> int:
    """Pass the program's signals on to the copy running its command until the copy ends, and end as it did."""
    import signal

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    def suspend(signum: int, frame: object) -> None:  # Ctrl-Z: the copy stops with the program
        forward(signal.SIGSTOP, frame)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # returns once continued, or at once where the kernel drops it
        signal.signal(signal.SIGTSTP, suspend)  # (a process group no shell controls: the program never stopped)
        forward(signal.SIGCONT, frame)

    for name in _FORWARDED:
        signal.signal(getattr(signal, name), forward)
    signal.signal(signal.SIGTSTP, suspend)
    signal.signal(signal.SIGCONT, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # those that came meanwhile are passed on now
    for signum in noted:
        forward(signum, None)
    try:
        reply = _line(replies)
    except OSError:
        reply = b""
    if reply.startswith(b"exit "):
        return int(reply.removeprefix(b"exit "))
    if reply.startswith(b"signal "):  # ended by a signal: so does the program, as its shell expects
        signum = int(reply.removeprefix(b"signal "))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set, and needs not
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    forward(signal.SIGTERM, None)
    print("kb: error: kb watch stopped before the command ended; run it again", file=sys.stderr)
    return 1


def _line(replies: io.BufferedReader) -> bytes:
    line = replies.readline()
    if not line.endswith(b"\n"):
        raise ConnectionError("closed")
    return line[:-1]


def _socket_of(explicit: str | None) -> Path | None:
    """The server socket of the knowledge base the command would use, if there is one."""
    from kb.errors import KbNotFound
    from kb.home import CACHE, find_root

    try:
        return socket_path(find_root(explicit) / CACHE)
    except (KbNotFound, OSError):
        return None


def stamp() -> str:
    """What makes two processes the same kb: the interpreter, kb's folder, version and modules' times, and the
    packages installed beside it (a version is in its metadata folder's name)."""
    import kb

    folder = os.path.dirname(kb.__file__)
    newest = 0
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(top, name)).st_mtime_ns)
    installed = []  # what is installed: each distribution's metadata folder and each .pth, by name
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            with contextlib.suppress(OSError):
                installed += sorted(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info", ".pth")))
    return f"{sys.executable}|{folder}|{kb.__version__}|{newest}|{'|'.join(installed)}"


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


# The server's side: started by `kb watch`, stopped when the watch ends (its standard input closes).


def start(cache: Path) -> subprocess.Popen | None:
    """Start the server of the knowledge base whose cache folder is `cache`; it stops when `stop` closes its pipe
    (or the watch ends any other way). None if it cannot start: commands then run themselves."""
    import subprocess

    path = socket_path(cache)
    # Not `-m`, and without `-c`'s '' on the path: the watch's working folder would be searched first, where a local
    # file named like a module (selectors.py) would be imported instead, which the program does not do.
    code = "import sys; sys.path = [p for p in sys.path if p]; from kb.forkserver import serve; serve()"  # '': cwd
    try:
        # Its own errors go to a log beside the socket: on the watch's standard error they would keep it open
        # (to whoever reads it) for as long as the server finishes the commands it runs.
        with open(path.with_name(LOG), "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=log, start_new_session=True,  # not the watch's Ctrl-C
            )  # fmt: skip
    except OSError:
        return None


def stop(server: subprocess.Popen) -> None:
    """Take no more commands; the server ends once the commands it runs have ended."""
    with contextlib.suppress(OSError):
        server.stdin.close()


def serve() -> None:
    """Take commands on the socket named on the command line until standard input (the watch's pipe) closes."""
    import selectors
    import signal
    import socket

    path = Path(sys.argv[1])
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
    own_fds = (listener.fileno(), wake_r, wake_w, sys.stdin.fileno(), selector.fileno())
    listening = True
    while listening or running:
        for key, _ in selector.select():
            if key.fileobj is listener and listening:
                _take(listener, own, running, selector, own_fds, command)
            elif key.fileobj == wake_r:
                os.read(wake_r, 4096)
            elif key.fileobj == sys.stdin.fileno() and listening:  # the watch ended: take no more
                listening = False
                selector.unregister(listener)
                selector.unregister(sys.stdin.fileno())
                listener.close()
                with contextlib.suppress(OSError):
                    if os.stat(path).st_ino == inode:  # not a newer watch's
                        _remove(path)
            elif key.data is not None:  # a program's end of the socket: closed means the program is gone
                with contextlib.suppress(OSError):
                    if key.fileobj.recv(1) == b"":
                        selector.unregister(key.fileobj)
                        os.kill(key.data, signal.SIGKILL)  # as the program was killed, its command is
        _collect(running, selector)


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
    selector: selectors.BaseSelector,
    own_fds: tuple[int, ...],
    command: Callable[[], object],
) -> None:
    import json
    import selectors
    import socket

    received: list[int] = []
    try:
        conn, _ = listener.accept()
    except OSError:  # gone before it was taken, or no descriptor left: the program runs its command itself
        return
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
        if uid != os.getuid() or not isinstance(request, dict) or request.get("stamp") != own or len(received) != 3:
            conn.sendall(b"no\n")
            raise ConnectionError("refused")
        conn.sendall(b"ok\n")
        if conn.recv(1) != b"g":  # the program gave up: it runs the command itself
            raise ConnectionError("gave up")
        child = os.fork()
    except (OSError, ValueError):
        conn.close()
        for fd in received:
            os.close(fd)
        return
    if child == 0:  # the copy keeps none of the server's descriptors, nor those of the programs' sockets
        try:
            _run(received, request, (*own_fds, conn.fileno(), *(c.fileno() for c in running.values())), command)
        finally:
            os._exit(1)
    for fd in received:
        os.close(fd)
    running[child] = conn
    with contextlib.suppress(OSError):
        conn.sendall(f"pid {child}\n".encode())
    selector.register(conn, selectors.EVENT_READ, child)


def _collect(running: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    """Tell each program whose copy ended how it ended."""
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
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn)
        code = os.waitstatus_to_exitcode(status)
        with contextlib.suppress(OSError):
            conn.sendall((f"exit {code}" if code >= 0 else f"signal {-code}").encode() + b"\n")
        conn.close()


def _run(fds: list[int], request: dict, inherited: tuple[int, ...], command: Callable[[], object]) -> None:
    """In the copy: become the program that asked, run its command, and exit as Python would have."""
    import signal

    code = 1
    noted: list[int] = []
    try:
        signal.set_wakeup_fd(-1)
        for name in ("SIGCHLD", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        # Until the command runs, a Ctrl-C is noted and acted on then, as the program does while it starts.
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
        for fd in inherited:
            os.close(fd)
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
    os._exit(_flushed(code))


def _become(fds: list[int], request: dict) -> None:
    """Take the program's standard streams, environment, folder, time zone, file mode mask and name."""
    import time

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    # The streams as Python made the program's: their encodings, errors and buffering (PYTHONUNBUFFERED).
    sys.stdin, sys.stdout, sys.stderr = (
        _text(fd, "rb" if fd == 0 else "wb", *stream) for fd, stream in enumerate(request["streams"])
    )
    script, sys.modules["__main__"].__package__ = request["program"]
    sys.argv = [script, *request["args"]]


def _flushed(code: int) -> int:
    """Write what the command left buffered; as Python at its end, a failure is reported and the status is 120."""
    for stream in (sys.stdout, sys.stderr):
        if stream.closed:  # as Python: a closed stream is not flushed
            continue
        try:
            stream.flush()
        except (OSError, ValueError) as error:
            with contextlib.suppress(OSError, ValueError):
                print(f"Exception ignored in: {stream!r}\n{type(error).__name__}: {error}", file=sys.stderr)
            code = 120
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _text(
    fd: int, mode: str, encoding: str, errors: str, line_buffering: bool, write_through: bool
) -> io.TextIOWrapper:
    import io

    binary = open(fd, mode, buffering=0 if write_through else -1, closefd=False)  # noqa: SIM115 (as long as the copy)
    return io.TextIOWrapper(binary, encoding, errors, line_buffering=line_buffering, write_through=write_through)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
