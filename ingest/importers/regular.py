"""Only regular files are read or copied by an import: a FIFO blocks for good, a device never ends.

`refuse_irregular` is for a file a person named (a link to a file is followed); `is_regular` is for the
files found walking a folder, where a link is skipped, for it can point anywhere on the machine.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kb.errors import KbError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def refuse_irregular(path: Path, expected: str) -> None:
    """KbError naming what `path` is when it exists and is not a regular file (a link to one is followed), and
    what was `expected` (e.g. "a JUnit XML file"). A missing or unreadable file is left to the caller to name.
    The kind is checked again on the file opened without blocking: a FIFO or device answers at once."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                mode = os.fstat(descriptor).st_mode
            finally:
                os.close(descriptor)
    except OSError:
        return
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise KbError(f"{path}: {kind_of(mode)}, not a regular file; expected {expected}")


def is_regular(path: Path) -> bool:
    """Whether `path` itself (a link is not followed) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
