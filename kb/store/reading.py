"""Reading an entry file: only a regular file, inside the knowledge base, of a bounded size.

A name ending in `.md` can be anything: a FIFO blocks `open()` for ever (while the index lock is held), a link
to `/dev/zero` (git commits links) reads until memory runs out, and a link out of the knowledge base reads a
file nobody meant to share. Each of them is a problem named by its file, like any other broken entry.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kb.errors import EntryError, Problem

# A file that went between a listing and the look at it; a folder on its path or in its place.
GONE = (FileNotFoundError, NotADirectoryError, IsADirectoryError)

MAX_ENTRY_BYTES = 16 * 1024 * 1024  # an entry is front matter and notes; logs and traces are attachments
READ_STEP = 1 << 16  # what is read at a time past the size a file had when it was opened
_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket",
          stat.S_IFDIR: "a folder"}  # fmt: skip


def leads_nowhere(exc: OSError) -> bool:
    """Whether a lookup found no file: gone (GONE), or a link through a file or in a loop, which is no file either
    (os.DirEntry takes such a link for neither a file nor a folder)."""
    return isinstance(exc, GONE) or exc.errno == errno.ELOOP


def read_entry_bytes(path: Path, inside: Path | None = None) -> bytes:
    """The bytes of the entry file at `path`, or an EntryError naming it. A link must stay inside `inside`
    (the knowledge base) or its own folder; OSError (a file that vanished) passes through."""
    return read_entry_file(path, inside)[0]


class Refused(EntryError):
    """A file kb does not read as an entry, with the status of the file refused when it was opened (`status`)."""

    def __init__(self, path: Path, message: str, status: os.stat_result | None = None):
        super().__init__([Problem(path, None, None, message)])
        self.status = status


def read_entry_file(path: Path, inside: Path | None = None) -> tuple[bytes, os.stat_result]:
    """read_entry_bytes(), with the file's status taken from the file opened, before it was read (and on a Refused
    once opened): a file replaced or changed meanwhile then differs from the size and time the index keeps (but for a
    change of the same size within one tick of the file system's clock), so the next sync reads it again."""
    if path.is_symlink():
        target = Path(os.path.realpath(path))  # (Path.resolve raises RuntimeError for a loop of links)
        homes = [path.parent.resolve(), *([inside.resolve()] if inside is not None else [])]
        if not any(target.is_relative_to(home) for home in homes):
            raise Refused(path, "is a link to a file outside the knowledge base; kb reads only files inside it")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))  # a FIFO opens without a writer
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise Refused(path, f"is {kind}, not a regular file; kb reads only regular files as entries", info)
        if info.st_size > MAX_ENTRY_BYTES:
            raise Refused(path, _too_large(info.st_size), info)
        # os.read, not a buffered file object: making one took most of the time an entry's reading took.
        data = os.read(fd, info.st_size + 1)
        while len(data) <= MAX_ENTRY_BYTES and (more := os.read(fd, min(READ_STEP, MAX_ENTRY_BYTES + 1 - len(data)))):
            data += more  # it grew while being read
    finally:
        os.close(fd)
    if len(data) > MAX_ENTRY_BYTES:  # it grew while being read
        raise Refused(path, _too_large(len(data)), info)
    return data, info


def _too_large(size: int) -> str:
    return (
        f"is {size / 1024 / 1024:.1f} MiB, over the {MAX_ENTRY_BYTES // 1024 // 1024} MiB an entry may have; "
        "keep large text as an attachment"
    )
