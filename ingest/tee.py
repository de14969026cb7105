"""Pass a command's output through live while keeping a redacted copy of it as a log file.

Two things must never stop the output passing through: the log failing (a full disk: the log is cut, a
little room is made for the entry, and the copy to the terminal goes on), and the command's end not being
the pipes' end (a background child that keeps stdout open: kb stops reading a moment after the command
ended instead of waiting for that child).
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO

from kb.secrets.redact import StreamMasker

CHUNK = 64 * 1024
LONGEST_LINE = 64 * 1024  # progress bars redraw with \r and no \n: past this a partial line is written anyway
GRACE_S = 1.0  # after the command ended, how long what it left in the pipes is still read
POLL_S = 0.05
ROOM = 256 * 1024  # given back from a log cut by a full disk, so that the entry itself can still be written


class Tee:
    """Copies pipes to the terminal untouched and, with secrets masked, to one log file."""

    def __init__(self, log_path: Path):
        # Unbuffered and appending: a killed kb leaves every complete line on disk, and a failed write is
        # known at once (a buffer would fail again at close).
        self._log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._name = log_path.name
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._ended: float | None = None  # monotonic time the command ended
        self.bytes = 0
        self.cut: str | None = None  # why the log stops before the output did
        self.held_open = False  # a pipe was still open GRACE_S after the command ended: a descendant holds it

    def follow(self, pipe: BinaryIO, sink: BinaryIO) -> None:
        thread = threading.Thread(target=self._pump, args=(pipe, sink), daemon=True, name="kb-tee")
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        """Called once the command has ended: what is in the pipes is read for GRACE_S more, then no longer."""
        self._ended = time.monotonic()
        for thread in self._threads:
            thread.join()
        os.close(self._log)

    def _pump(self, pipe: BinaryIO, sink: BinaryIO) -> None:
        masker = StreamMasker()
        pending = b""
        fd = pipe.fileno()
        while True:
            if not select.select([fd], [], [], POLL_S)[0]:
                if self._ended is not None and time.monotonic() - self._ended > GRACE_S:
                    self.held_open = True
                    break
                continue
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            try:
                sink.write(chunk)
                sink.flush()
            except (OSError, ValueError):
                pass  # our own stdout went away (closed terminal, broken pipe): keep logging
            pending += chunk
            cut = pending.rfind(b"\n") + 1
            if not cut and len(pending) > LONGEST_LINE:
                cut = len(pending)
            if cut:
                self._write(masker.feed(pending[:cut].decode("utf-8", errors="replace")))
                pending = pending[cut:]
        if pending:
            self._write(masker.feed(pending.decode("utf-8", errors="replace") + "\n"))
        self._write(masker.close())
        pipe.close()

    def _write(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8")
        with self._lock:
            if self.cut is not None:
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._log, view) :]
                self.bytes += len(data)
            except OSError as exc:
                self.bytes += len(data) - len(view)
                self._cut(exc)

    def _cut(self, exc: OSError) -> None:
        kept = max(self.bytes - ROOM, 0)
        try:
            os.ftruncate(self._log, kept)
            self.bytes = kept
        except OSError:
            pass
        self.cut = f"{self._name} stops after {self.bytes:,} bytes: {exc.strerror}; the rest reached the terminal only"
        try:
            sys.stderr.write(f"kb: {self.cut}; the command goes on\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
