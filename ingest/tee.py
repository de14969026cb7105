"""Pass a command's output through live while keeping a redacted copy of it as a log file."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO

from kb.redact import redact_text

CHUNK = 64 * 1024
LONGEST_LINE = 64 * 1024  # progress bars redraw with \r and no \n: past this a partial line is written anyway


class Tee:
    """Copies pipes to the terminal untouched and, line by line with secrets masked, to one log file."""

    def __init__(self, log_path: Path):
        self._log = open(log_path, "ab")  # noqa: SIM115 - held open across threads until close(); appending: a killed kb leaves every complete line on disk
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.bytes = 0

    def follow(self, pipe: BinaryIO, sink: BinaryIO) -> None:
        thread = threading.Thread(target=self._pump, args=(pipe, sink), daemon=True, name="kb-tee")
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        for thread in self._threads:
            thread.join()
        self._log.close()

    def _pump(self, pipe: BinaryIO, sink: BinaryIO) -> None:
        pending = b""
        fd = pipe.fileno()
        while chunk := os.read(fd, CHUNK):
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
                self._write(pending[:cut])
                pending = pending[cut:]
        if pending:
            self._write(pending + b"\n")
        pipe.close()

    def _write(self, data: bytes) -> None:
        text = redact_text(data.decode("utf-8", errors="replace"))
        encoded = text.encode("utf-8")
        with self._lock:
            self._log.write(encoded)
            self._log.flush()
            self.bytes += len(encoded)
