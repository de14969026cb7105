"""Noticing that anything under the entries folder changed (entries and attachments), for `kb site serve`.

On Linux, inotify watches every folder below it, so an idle preview costs nothing and a change is seen at
once. Elsewhere, or when the system has no inotify watches left, the folder is walked once a second,
comparing every file's size and modification time: half a second of CPU per walk at 10,000 entries.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kb.errors import KbError

if TYPE_CHECKING:
    from inotify_simple import INotify


class Changes(Protocol):
    def changed(self, timeout_s: float) -> bool:
        """Whether something changed since the last call, waiting up to `timeout_s` for a change."""

    def close(self) -> None: ...


def watch(folder: Path) -> tuple[Changes, str | None]:
    """A watcher of `folder`'s tree, and why it had to fall back to walking the folder (None if it need not)."""
    try:
        return InotifyChanges(folder), None
    except ImportError:
        return WalkedChanges(folder), "no inotify on this system: the entries folder is walked once a second"
    except OutOfWatches as exc:
        return WalkedChanges(folder), f"{exc}; meanwhile the entries folder is walked once a second"


class OutOfWatches(KbError):
    """The system's limit on inotify watches is reached."""


def state(folder: Path) -> frozenset[tuple[str, int, int]]:
    """Every file's path, size and modification time below `folder`."""
    found = set()
    for parent in _folders(str(folder)):
        try:
            with os.scandir(parent) as listing:
                for item in listing:
                    if item.is_file():
                        stat = item.stat()
                        found.add((item.path, stat.st_size, stat.st_mtime_ns))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return frozenset(found)


def _folders(top: str) -> Iterator[str]:
    """`top` and every folder below it, linked ones too (once each: a link may point back up).

    Each is yielded before it is listed, so that a watch added then misses nothing made in it later.
    """
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            stat = os.stat(folder)
            if (stat.st_dev, stat.st_ino) in seen:
                continue
            seen.add((stat.st_dev, stat.st_ino))
            yield folder
            with os.scandir(folder) as listing:
                stack.extend(item.path for item in listing if item.is_dir())
        except (FileNotFoundError, NotADirectoryError):  # gone, or a file now, since the folder above was listed
            continue


class WalkedChanges:
    """Changes found by walking the folder after each wait."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.last = state(folder)

    def changed(self, timeout_s: float) -> bool:
        time.sleep(timeout_s)
        now = state(self.folder)
        changed, self.last = now != self.last, now
        return changed

    def close(self) -> None:
        pass  # nothing held


class InotifyChanges:
    """Changes reported by inotify, on every folder below (new ones watched as they come)."""

    def __init__(self, folder: Path) -> None:
        from inotify_simple import INotify, flags

        self.folder, self.flags = folder, flags
        self.mask = (
            flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.MOVED_FROM
            | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR
        )  # fmt: skip
        self.inotify: INotify = INotify()
        self.paths: dict[int, str] = {}  # watch descriptor -> folder
        try:
            self._watch_tree(str(folder))
        except BaseException:
            self.inotify.close()
            raise

    def _watch_tree(self, top: str) -> None:
        for folder in _folders(top):
            try:
                self.paths[self.inotify.add_watch(folder, self.mask)] = folder
            except (FileNotFoundError, NotADirectoryError):
                continue  # gone already: its removal is an event of the folder above
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise OutOfWatches(
                        f"out of inotify watches at {folder}: raise fs.inotify.max_user_watches (sysctl)"
                    ) from None
                raise

    def changed(self, timeout_s: float) -> bool:
        flags = self.flags
        if not self.paths:  # the entries folder was deleted or moved: watch it again once it is back
            time.sleep(timeout_s)
            self._watch_tree(str(self.folder))
            return bool(self.paths)
        changed = False
        for event in self.inotify.read(timeout=round(timeout_s * 1000)):
            changed = True
            if event.mask & flags.Q_OVERFLOW:  # events were lost, new folders' among them perhaps
                self._watch_tree(str(self.folder))
                continue
            parent = self.paths.get(event.wd)
            if parent is None:
                continue
            if parent == str(self.folder) and event.mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                self._forget()
                return True
            if event.mask & flags.IGNORED:  # a folder below went away
                del self.paths[event.wd]
            elif event.mask & (flags.CREATE | flags.MOVED_TO):
                path = os.path.join(parent, event.name)
                if os.path.isdir(path):  # a new folder, or a link to one
                    self._watch_tree(path)
        return changed

    def close(self) -> None:
        self.inotify.close()

    def _forget(self) -> None:
        for descriptor in self.paths:
            with contextlib.suppress(OSError):  # already dropped by the kernel
                self.inotify.rm_watch(descriptor)
        self.paths.clear()
