"""`kb watch`: a resident process that tells each sync which entry files changed, so it need not stat them all.

Without it a sync stats every entry file, which is seconds at 100,000 entries. The watcher keeps inotify
watches on the entries folders and appends every entry path that changes to a journal in the cache folder
(JSON lines: a header with the watcher's token, then `["p", path]`, `["r"]` for "look at everything",
`["c", cookie]`). A sync asks for everything up to now with a cookie: it creates a file in a folder the
watcher also watches, and since one inotify queue reports events in the order they happened, once the
cookie is in the journal so is every change made before it. The sync then looks only at the journaled
paths, and stores the token and the journal offset it has read up to with the index.

Whenever the journal cannot vouch for the whole folder, the sync looks at every file, as it does without a
watcher: no watcher alive (its lock is free), a journal from another watcher than the stored token, a
lost event (the kernel's queue overflowed), a folder moved away or deleted, or no answer to the cookie in
COOKIE_WAIT_S (a stopped watcher). Linux only (inotify); elsewhere `kb watch` says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from kb.errors import KbError
from kb.store.inotify import add_watch, folder_mask
from kb.store.knowledge_base import KnowledgeBase, is_text_name

if TYPE_CHECKING:
    from inotify_simple import Event, INotify

FOLDER = "watch"
JOURNAL = "journal"
LOCK = "lock"
COOKIES = "cookies"
COOKIE_WAIT_S = 2.0
COOKIE_POLL_S = 0.0005
# A journal this large starts again under a new token (the next sync then looks at everything once).
JOURNAL_LIMIT = 16 * 1024 * 1024
# The watcher wakes this often without events: Ctrl-C taken by another thread (a library's, such as the one
# pyarrow starts where pandas is loaded) leaves the main thread's wait uninterrupted, and Python acts on a signal
# only in the main thread, once it runs again.
WAKE_MS = 500


@dataclass(frozen=True)
class Changes:
    """What the journal says since the stored position: `paths` None means "look at every file"."""

    token: str
    offset: int
    paths: frozenset[str] | None


def changes(cache: Path, since: tuple[str, int] | None) -> Changes | None:
    """The entry paths changed since `since` (token, offset), or None when no watcher is running.

    With `since` None, or from another watcher, the answer is "every file" and the offset is the journal's end
    now: what the full look that follows covers.
    """
    folder = cache / FOLDER
    if not _alive(folder):
        return None
    try:
        with open(folder / JOURNAL, "rb") as journal:
            try:
                token = json.loads(journal.readline())[1]
            except (ValueError, IndexError, TypeError):
                return None
            if since is None or since[0] != token:
                return Changes(token, _line_end(journal), None)
            journal.seek(since[1])
            records, offset = _read_to_cookie(journal, folder / COOKIES, since[1])
    except FileNotFoundError:  # starting: not ready to vouch for anything
        return None
    if records is None or ["r"] in records:
        return Changes(token, offset, None)
    return Changes(token, offset, frozenset(record[1] for record in records if record[0] == "p" and len(record) == 2))


def _alive(folder: Path) -> bool:
    """A watcher holds its lock for as long as it runs; the kernel drops it however the watcher ends."""
    try:
        with open(folder / LOCK, "rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except FileNotFoundError:
        pass
    return False


def _line_end(journal: BinaryIO) -> int:
    """The offset just past the journal's last complete line."""
    data = journal.read()
    return journal.tell() - len(data) + data.rfind(b"\n") + 1 if data else journal.tell()


def _read_to_cookie(journal: BinaryIO, cookies: Path, offset: int) -> tuple[list[list[str]] | None, int]:
    """The records from `offset` up to a new cookie's (None if it never came), and the offset read up to."""
    name = f"{os.getpid()}-{os.urandom(6).hex()}"
    try:
        os.close(os.open(cookies / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(cookies / name)
    except OSError:  # a read-only cache: no cookie, so no promise
        return None, offset
    records: list[list[str]] = []
    pending = b""
    deadline = time.monotonic() + COOKIE_WAIT_S
    inode = os.fstat(journal.fileno()).st_ino
    while time.monotonic() < deadline:
        pending += journal.read()
        *lines, pending = pending.split(b"\n")
        for line in lines:
            offset += len(line) + 1
            try:
                record = json.loads(line)
            except ValueError:  # not written whole: what it named is unknown
                record = ["r"]
            if not (isinstance(record, list) and record and all(isinstance(part, str) for part in record)):
                record = ["r"]  # not the watcher's writing: trust none of it
            if record == ["c", name]:
                return records, offset
            records.append(record)
        with contextlib.suppress(OSError):
            if os.stat(cookies.parent / JOURNAL).st_ino != inode:  # the watcher started a new journal meanwhile
                break
        time.sleep(COOKIE_POLL_S)
    return None, offset


def watch(kb: KnowledgeBase, ready: Callable[[int], None] | None = None) -> None:
    """Watch the entries folders and journal their changes until interrupted; `ready(folders)` once watching."""
    try:
        from inotify_simple import INotify
    except ImportError:
        raise KbError("kb watch needs inotify (Linux); without it every command looks at every entry file") from None
    folder = kb.ensure_cache() / FOLDER
    (folder / COOKIES).mkdir(parents=True, exist_ok=True)
    with _only_watcher(folder / LOCK), INotify() as inotify:
        watcher = _Watcher(kb, inotify, folder)
        if ready:
            ready(len(watcher.folders))
        while True:
            watcher.handle(inotify.read(timeout=WAKE_MS))


@contextlib.contextmanager
def _only_watcher(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        for _ in range(20):  # a command checking whether a watcher runs holds the lock for a moment
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(0.05)
        else:
            raise KbError(f"another kb watch is already watching this knowledge base ({path} is locked)")
        yield


class _Watcher:
    def __init__(self, kb: KnowledgeBase, inotify: INotify, folder: Path) -> None:
        from inotify_simple import flags

        self.kb, self.inotify, self.folder, self.flags = kb, inotify, folder, flags
        self.folder_mask = folder_mask()
        self.folders: dict[int, str] = {}  # watch descriptor -> folder relative to entries/ ("" or "2026/")
        self.cookies = add_watch(inotify, str(folder / COOKIES), flags.CREATE | flags.DELETE_SELF | flags.ONLYDIR)
        self._watch_tree("", journal=False)  # watched first: a change from now on is seen
        self.journal = -1
        self._start_journal()

    def _watch_tree(self, relative: str, *, journal: bool) -> list[list[str]]:
        """Watch a folder and the folders below it that the scan enters; with `journal`, the entries found."""
        found = [["p", path] for path, _ in self.kb.scan(relative, on_folder=self._watch_folder)]
        return found if journal else []

    def _watch_folder(self, relative: str, path: str) -> None:
        self.folders[add_watch(self.inotify, path, self.folder_mask)] = relative

    def _start_journal(self) -> None:
        """A new journal under a new token, put in place whole: a reader sees the old one or the new one."""
        from kb.store import atomic

        token = os.urandom(8).hex()
        atomic.write_text(self.folder / JOURNAL, json.dumps(["kb-watch", token]) + "\n")
        if self.journal >= 0:
            os.close(self.journal)
        self.journal = os.open(self.folder / JOURNAL, os.O_WRONLY | os.O_APPEND)

    def handle(self, events: list[Event]) -> None:
        records: list[list[str]] = []
        for event in events:
            for record in self._records(event):
                if not records or record != records[-1]:  # a write is several events: one line will do
                    records.append(record)
        if records:
            data = "".join(json.dumps(record) + "\n" for record in records).encode()  # ASCII: json escapes the rest
            while data:
                data = data[os.write(self.journal, data) :]
            if os.fstat(self.journal).st_size > JOURNAL_LIMIT:
                self._start_journal()

    def _records(self, event: Event) -> list[list[str]]:
        flags = self.flags
        if event.mask & flags.Q_OVERFLOW:  # events were lost, a new folder's among them perhaps: watch anew
            self._watch_tree("", journal=False)
            return [["r"]]
        if event.wd == self.cookies:
            if event.mask & (flags.DELETE_SELF | flags.IGNORED):  # the cache folder was deleted, journal and all
                raise KbError(f"{self.folder} was removed, so kb watch stopped; start it again")
            return [["c", event.name]]
        prefix = self.folders.get(event.wd)
        if prefix is None:
            return []
        if event.mask & (flags.DELETE_SELF | flags.MOVE_SELF | flags.IGNORED):
            if prefix == "":  # the entries folder itself: whatever replaces it is unwatched
                raise KbError(f"{self.kb.entries_path} was moved or deleted, so kb watch stopped; start it again")
            if event.mask & flags.IGNORED:
                del self.folders[event.wd]
            return [["r"]]
        if not event.name or event.name.startswith("."):  # hidden: temporary files, the cache
            return []
        if not is_text_name(event.name):  # left out, as by the scan
            return []
        relative = prefix + event.name
        path = self.kb.entries_path / relative
        if event.mask & flags.ISDIR or (not event.name.endswith(".md") and path.is_dir()):  # a link to one too
            if event.mask & (flags.CREATE | flags.MOVED_TO):
                if (self.kb.entries_path / f"{relative}.md").is_file():
                    return []  # an entry's attachment folder
                return self._watch_tree(f"{relative}/", journal=True)
            return [["r"]] if event.mask & (flags.DELETE | flags.MOVED_FROM) else []
        if not event.name.endswith(".md"):
            if event.mask & (flags.DELETE | flags.MOVED_FROM) and f"{relative}/" in self.folders.values():
                return [["r"]]  # a link to a folder, gone
            return []
        folder = path.with_suffix("")  # the entry's attachment folder, if it has one
        if event.mask & (flags.DELETE | flags.MOVED_FROM) and folder.is_dir():
            # No longer an attachment folder: the entries in it count now (the scan's rule).
            return [["p", relative], *self._watch_tree(f"{relative[:-3]}/", journal=True)]
        if event.mask & (flags.CREATE | flags.MOVED_TO) and _holds_entries(folder):
            return [["r"]]  # an attachment folder now: the entries in it no longer count
        return [["p", relative]]


def _holds_entries(folder: Path) -> bool:
    """Whether an .md file lies anywhere below `folder` (an attachment folder rarely holds one)."""
    return any(name.endswith(".md") for _, _, names in os.walk(folder) for name in names)
