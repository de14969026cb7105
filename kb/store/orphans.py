"""Entries left `running` by a `kb record` that was killed (SIGKILL, power loss): found, and settled as `killed`.

The recorder writes its host, pid and process start time into the entry. On the same host, a pid that is
gone, or reused by a process that started at another time, means the recorder died without finishing.
Entries recorded on other hosts cannot be judged from here and stay as they are. A dead recorder's
temporary files (an atomic write it never finished) are removed as its entry is settled.

Closing an entry (its outcome, failure class, output tail) is the recorder's work, in ingest/: the caller hands
it in as an argument (the CLI passes ingest.killed.settle); without it, orphans are found but left as they are.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from kb.errors import KbError
from kb.model.entry import Entry
from kb.store import atomic
from kb.store.folders import SETTLED_NS
from kb.store.knowledge_base import KnowledgeBase

START_TIME_SLACK_S = 1.0
# In the cache folder: the entries folder's modification time when it was last found without temporary files.
LOOKED = "entries-without-temporaries"

Settle = Callable[[KnowledgeBase, Entry], Entry]  # how an orphan is closed as killed (ingest.killed.settle)


def is_orphan(entry: Entry) -> bool:
    if entry.status != "running":
        return False
    import socket

    recorder = entry.data.get("recorder") or {}
    if recorder.get("host") != socket.gethostname() or not isinstance(recorder.get("pid"), int):
        return False
    import psutil

    try:
        started = psutil.Process(recorder["pid"]).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False
    return abs(started - float(recorder.get("started") or 0)) > START_TIME_SLACK_S


def remove_leftovers(kb: KnowledgeBase, entry: Entry) -> None:
    """The temporary files of writers that died: the recorder's beside the entry (the entry itself), and any
    writer's in the entry's attachments (the recorder's diff and masked run folder, a rank's summary, a kb command
    killed while it settled this entry)."""
    pid = entry.data["recorder"]["pid"]
    # Beside the entry only the recorder's: a writer on another host sharing the folder would look dead from here.
    if _gone(pid):  # else the pid is another process's now, and its files may be in use
        with contextlib.suppress(OSError):  # gone, or unreadable: nothing to remove there
            for path in atomic.temporaries((entry.path or kb.entry_path(entry.id)).parent, pid):
                _remove(path)
    for folder, _, _ in os.walk(kb.attachments_path(entry)):
        with contextlib.suppress(OSError):
            for path in atomic.temporaries(Path(folder)):
                if _gone(atomic.writer_of(path)):
                    _remove(path)


def remove_unpublished(kb: KnowledgeBase) -> None:
    """A recorder killed while writing its new entry leaves it in a temporary file that never became the
    entry (and nothing ran yet): remove those whose recorder is dead.

    The folder is listed only when it changed since it was last found without any: making, renaming or
    removing a file in it moves the folder's modification time (listing 90,000 names took 0.15 s a command).
    """
    folder, mark = kb.entries_path, kb.cache_path / LOOKED
    try:
        changed = os.stat(folder).st_mtime_ns
    except OSError:
        return
    if _marked(mark) == changed:
        return
    began = time.time_ns()
    try:
        found = atomic.temporaries(folder)
    except OSError:  # not listed: nothing is known, so nothing is marked
        return
    for path in found:
        try:
            entry = Entry.parse(path.read_text("utf-8"), path)
        except (KbError, OSError, UnicodeDecodeError):
            # Cut short: killed while writing it, or still being written (for milliseconds) by a live one.
            writer = atomic.writer_of(path)
            if writer is not None and _gone(writer):
                _remove(path)
            continue
        if is_orphan(entry) and _gone(entry.data["recorder"]["pid"]):
            _remove(path)
    # Only a time well before the listing vouches for it: a file made within the same tick of the clock
    # would leave the folder's time as it was.
    if not found and changed < began - SETTLED_NS:
        with contextlib.suppress(OSError):  # a read-only cache: list again next time
            atomic.write_text(mark, f"{changed}\n")


def _marked(mark: Path) -> int | None:
    try:
        return int(mark.read_text("ascii"))
    except (OSError, ValueError):
        return None


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only folder keeps it: harmless, and every scan skips it
        path.unlink(missing_ok=True)


def _gone(pid: int) -> bool:
    import psutil

    return not psutil.pid_exists(pid)


def settle_orphans(kb: KnowledgeBase, entries: Iterable[Entry], settle: Settle) -> list[Entry]:
    """The same entries, with every orphan settled."""
    return [settle(kb, entry) if is_orphan(entry) else entry for entry in entries]


def settle_running(kb: KnowledgeBase, paths: Iterable[str], settle: Settle) -> int:
    """Settle the orphans among these entries (paths relative to the entries folder, those the index knows as
    running); returns how many were settled."""
    entries = []
    for path in paths:
        try:
            entries.append(Entry.read(kb.entries_path / path))
        except (KbError, OSError):
            continue  # changed or gone since it was indexed: the next sync sees it as it is now
    return sum(1 for entry in entries if is_orphan(entry) and settle(kb, entry))
