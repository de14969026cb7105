"""Noticing that anything under the entries folder changed (entries and attachments), for `kb site serve`.

On Linux, inotify watches every folder below it, so an idle preview costs nothing and a change is seen at
once. Without inotify, or once it fails (the system's limit on watches reached), the folder is walked once
a second instead, comparing every file's size and modification time (0.1 to 0.15 s a walk at 10,000 entries).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from kb.store import folders, inotify


class Changes(Protocol):
    def changed(self, timeout_s: float) -> bool:
        """Whether something changed since the last call, waiting up to `timeout_s` for a change."""

    def close(self) -> None: ...


def watch(folder: Path, say: Callable[[str], None]) -> Changes:
    """Changes under `folder`: by inotify while it works, else by walking it; `say` tells why it walks."""
    try:
        return _Fallback(InotifyChanges(folder), folder, say)
    except ImportError:
        say("no inotify on this system: the entries folder is walked once a second")
    except OSError as exc:  # out of inotify instances, or of watches
        say(f"cannot use inotify ({exc}): the entries folder is walked once a second")
    except inotify.OutOfWatches as exc:
        say(f"{exc}; meanwhile the entries folder is walked once a second")
    return WalkedChanges(folder)


def state(folder: Path) -> frozenset[tuple[str, int, int]]:
    """Every file's path, size and modification time below `folder` (none while it is not there)."""
    if not folder.is_dir():
        return frozenset()
    found = set()
    for _, items in folders.walk(str(folder)):
        for item in items:
            with contextlib.suppress(FileNotFoundError):  # deleted since the listing
                if folders.is_file(item):  # (a link leading nowhere is none)
                    stat = item.stat()
                    found.add((item.path, stat.st_size, stat.st_mtime_ns))
    return frozenset(found)


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

        self.folder, self.flags, self.mask = folder, flags, inotify.folder_mask()
        self.inotify = INotify()
        self.paths: dict[int, str] = {}  # watch descriptor -> folder
        self.root: int | None = None  # the entries folder's watch descriptor
        try:
            self._watch_root()
        except BaseException:
            self.inotify.close()
            raise

    def _watch_root(self) -> None:
        self._watch_tree(str(self.folder))
        # The descriptor, not the path: a link below that points back up watches the same folder under another.
        self.root = next((wd for wd, path in self.paths.items() if path == str(self.folder)), None)

    def _watch_tree(self, top: str) -> None:
        def watch(_: str, folder: str) -> None:
            self.paths[inotify.add_watch(self.inotify, folder, self.mask)] = folder

        for _ in folders.walk(top, on_folder=watch):
            pass

    def changed(self, timeout_s: float) -> bool:
        flags = self.flags
        if self.root is None:  # the entries folder was deleted or moved: watch it again once it is back
            time.sleep(timeout_s)
            if self.folder.is_dir():
                self._watch_root()
            return self.root is not None
        changed = False
        for event in self.inotify.read(timeout=round(timeout_s * 1000)):
            changed = True
            if event.mask & flags.Q_OVERFLOW:  # events were lost, new folders' and the folder's own perhaps
                self._forget()
                return True
            if event.wd == self.root and event.mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                self._forget()
                return True
            parent = self.paths.get(event.wd)
            if parent is None:
                continue
            path = os.path.join(parent, event.name)
            if event.mask & flags.IGNORED:  # a folder below went away
                del self.paths[event.wd]
            elif event.mask & flags.MOVED_FROM and event.mask & flags.ISDIR:  # moved away, or within (re-watched)
                self._unwatch(path)
            elif event.mask & (flags.CREATE | flags.MOVED_TO) and os.path.isdir(path):  # or a link to one
                self._watch_tree(path)
        return changed

    def _unwatch(self, top: str) -> None:
        for descriptor, path in list(self.paths.items()):
            if path == top or path.startswith(top + os.sep):
                with contextlib.suppress(OSError):
                    self.inotify.rm_watch(descriptor)
                del self.paths[descriptor]

    def _forget(self) -> None:
        """Drop every watch; the next look watches the tree afresh."""
        for descriptor in self.paths:
            with contextlib.suppress(OSError):  # already dropped by the kernel
                self.inotify.rm_watch(descriptor)
        self.paths.clear()
        self.root = None

    def close(self) -> None:
        self.inotify.close()


class _Fallback:
    """inotify until it fails (the system's limit on watches reached), then a walk of the folder once a second."""

    def __init__(self, watcher: Changes, folder: Path, say: Callable[[str], None]) -> None:
        self.watcher, self.folder, self.say = watcher, folder, say

    def changed(self, timeout_s: float) -> bool:
        try:
            return self.watcher.changed(timeout_s)
        except (OSError, inotify.OutOfWatches) as exc:
            self.say(f"{exc}; from now on the entries folder is walked once a second")
            self.watcher.close()
            self.watcher = WalkedChanges(self.folder)
            return True  # what changed meanwhile is unknown

    def close(self) -> None:
        self.watcher.close()
