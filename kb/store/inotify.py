"""What kb watch and kb site serve share of inotify (Linux): the events a watched folder reports, adding a watch."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from kb.errors import KbError

if TYPE_CHECKING:
    from inotify_simple import INotify


class OutOfWatches(KbError):
    """The system's limit on inotify watches is reached."""


def folder_mask() -> int:
    """Everything that changes what a folder holds, the folder itself going included."""
    from inotify_simple import flags

    return (
        flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.MOVED_FROM
        | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR
    )  # fmt: skip


def add_watch(inotify: INotify, path: str, mask: int) -> int:
    """The watch descriptor of `path`; OutOfWatches says what to do when the system has none left."""
    try:
        return inotify.add_watch(path, mask)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise OutOfWatches(
                f"out of inotify watches at {path}: raise fs.inotify.max_user_watches (sysctl)"
            ) from None
        raise
