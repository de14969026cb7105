"""`kb site serve`: build the site, serve it on loopback, and rebuild it when the entries change.

Only a loopback address is accepted: this is a preview for the person at the machine, not a server. For the
same reason a request must name a loopback host (a page elsewhere whose name was pointed at 127.0.0.1, DNS
rebinding, is refused), and only the site's own files are served: no link out of it is followed, no folder listed.
Changes to the entries folder (entries and attachments) are noticed as kb.website.changes says; a burst of
them (a recording writes several files) is one rebuild, and a rebuild is incremental, so it costs little.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kb.errors import KbError
from kb.store.knowledge_base import KnowledgeBase
from kb.store.orphans import Settle
from kb.website import changes
from kb.website.build import build_site, default_out

if TYPE_CHECKING:
    from kb.index.sync import Counting, Waiting

# An attachment runs nothing and loads nothing, in an origin of its own (sandbox without allow-scripts).
ATTACHMENT_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
WAIT_S = 1.0  # how long one wait for a change lasts: how soon a stop is noticed
SETTLE_S = 0.2  # a change is rebuilt once nothing more changed for this long
SETTLE_MAX_S = 2.0  # ...or this long after it, whichever comes first
URL_MAX = 8_192  # a longer request path is refused (414), as common servers do
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class _Handler(SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
    }

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")  # a preview: always the newest build
        if self._is_attachment():
            # Files from runs and people: never a page of this origin, whatever they hold or claim to be.
            self.send_header("Content-Security-Policy", ATTACHMENT_POLICY)
            self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def _is_attachment(self) -> bool:
        """Whether the request is for a file in an entry's attachment folder (entries/.../<id>/...)."""
        if not hasattr(self, "path"):  # a request line refused before it was read (414)
            return False
        path = Path(self.translate_path(self.path))
        root = Path(self.directory) / "entries"
        if not path.is_relative_to(root):
            return False
        return any(folder.with_name(f"{folder.name}.html").is_file() for folder in path.parents if folder != root
                   and folder.is_relative_to(root))  # fmt: skip

    def send_head(self):  # type: ignore[no-untyped-def]
        """The file asked for, or the error that says why not: a host that is not this machine's, a path that is
        too long or holds a NUL, a link out of the site, a folder without its index.html (never listed)."""
        if not _loopback_host(self.headers.get("Host"), self.server.allowed_host):  # type: ignore[attr-defined]
            self.send_error(421, "Misdirected Request: this preview answers only to a loopback host name")
            return None
        if len(self.path) > URL_MAX:
            self.send_error(414, f"URI Too Long: over {URL_MAX} characters")
            return None
        path = self.translate_path(self.path)
        root = Path(self.directory).resolve()
        try:
            real = Path(path).resolve()
        except (OSError, ValueError):  # a NUL byte, a name too long for the file system
            self.send_error(400, "Bad Request: not a path of this site")
            return None
        if not real.is_relative_to(root) or (real.is_dir() and not (real / "index.html").is_file()):
            self.send_error(404)
            return None
        return super().send_head()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the terminal shows builds, not requests

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allowed_host = "127.0.0.1"  # the address served: a Host header naming it is accepted too

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a browser that went away is no error
            super().handle_error(request, client_address)


def _loopback_host(header: str | None, allowed: str) -> bool:
    """Whether a request's Host header (with or without its port) names this machine's loopback, or `allowed`.
    A request without one (HTTP/1.0) comes from no browser page."""
    if header is None:
        return True
    name = header.strip().lower()
    name = name[1 : name.find("]")] if name.startswith("[") else name.rpartition(":")[0] if ":" in name else name
    if name in LOOPBACK_NAMES or name == allowed.lower():
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def loopback(host: str) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise KbError(f"--host {host!r}: kb site serve listens on loopback only (127.0.0.1 or ::1)")
    return host


def make_server(out: Path, host: str, port: int) -> ThreadingHTTPServer:
    _Server.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        server = _Server((loopback(host), port), functools.partial(_Handler, directory=str(out)))
        server.allowed_host = host
        return server
    except OSError as exc:
        raise KbError(f"cannot listen on {host}:{port}: {exc.strerror}; try --port 0 for a free port") from None


def serve(
    kb: KnowledgeBase,
    out: Path | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    watch: bool = True,
    echo: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    settle: Settle | None = None,
    waiting: Waiting | None = None,
    indexing: Counting | None = None,
) -> None:
    """Build the site, serve it, and build it again as entries change. `waiting` and `indexing`: how the builds' syncs
    say that they wait for another process's lock and how far their indexing is (the command line's)."""
    out = (out or default_out(kb)).resolve()
    loopback(host)
    stop = stop or threading.Event()
    with contextlib.ExitStack() as cleanup:
        # Watching starts before the first build, so that a change made during it is rebuilt.
        watcher = changes.watch(kb.entries_path, lambda why: echo(f"kb: {why}")) if watch else None
        if watcher:
            cleanup.callback(watcher.close)

        def built() -> str:
            return build_site(kb, out, settle=settle, waiting=waiting, indexing=indexing).summary()

        echo(f"Site: {built()}")
        server = make_server(out, host, port)
        cleanup.callback(server.server_close)
        shown = f"[{host}]" if ":" in host else host
        echo(f"Serving {out} at http://{shown}:{server.server_address[1]}/ (Ctrl-C stops)")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        cleanup.callback(server.shutdown)  # only once serving: it waits for serve_forever to end
        with contextlib.suppress(KeyboardInterrupt):
            while not stop.is_set():
                if watcher is None:
                    stop.wait(WAIT_S)
                elif watcher.changed(WAIT_S):
                    settled_by = time.monotonic() + SETTLE_MAX_S  # a file written without pause still gets rebuilt
                    while time.monotonic() < settled_by and not stop.is_set() and watcher.changed(SETTLE_S):
                        pass
                    try:
                        echo(f"Rebuilt: {built()}")
                    except KbError as exc:
                        echo(f"kb: rebuild failed: {exc}")
