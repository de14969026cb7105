"""The full look at the entries folder, as git's index looks at a work tree: every entry file's signature
(kb.index.signature: size, times and inode).

What the last full look found is kept in the index, per folder: its status-change time (ctime) and the folders the
scan entered below it (`folder_looks`), its entry files' names in scan order and each one's signature
(`folder_files`).
- Making, renaming or removing a file in a folder moves the folder's ctime, and so does putting its modification time
  back (`rsync -a`, `tar`): nothing can set a ctime. So a folder whose ctime is as stored holds the same names and is
  not listed again (listing and sorting 90,000 names in one folder took 0.35 s a command). A ctime within
  `SETTLED_NS` of the look that found it vouches for nothing (a name made in the same tick of the clock leaves it as
  it was), nor does a folder holding a link (what a link points to changes without it).
- Each file is still looked up (`stat`): an edit in place moves only the file's own time.
- The signatures, compared with the stored ones as one array per folder, tell what changed without reading the
  manifest back. Storing them again after an edit writes the 32 bytes that changed, in place.

The rows stand for the manifest only while no one wrote it since: a sync that writes the manifest without a full look
(from kb watch's journal) empties `folder_looks`, and a full look stores it again last, in the sync's transaction.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from stat import S_ISDIR

from kb.index.signature import GONE as GONE_SIGNATURE
from kb.index.signature import WIDTH, Signature
from kb.store.folders import SETTLED_NS, each_folder_once
from kb.store.knowledge_base import KnowledgeBase, entry_file_names
from kb.store.reading import GONE, leads_nowhere

_BYTES = 8 * WIDTH  # one file's signature, as stored
HALVED_FROM = 20_000  # a folder with this many entry files is looked at by two processes (_halved)


@dataclass
class Folder:
    prefix: str  # relative to entries/: "" or "2026/"
    ctime_ns: int | None  # its status-change time, None where it vouches for nothing
    names: list[str]  # its entry files, in scan order
    below: list[str]  # the folders the scan entered, in scan order
    signatures: array = field(default_factory=lambda: array("q"))  # each name's signature, one after the other

    def signature(self, index: int) -> Signature:
        return tuple(self.signatures[WIDTH * index : WIDTH * (index + 1)])  # type: ignore[return-value]


@dataclass
class Look:
    folders: list[Folder]
    changed: list[tuple[str, str, Signature]]  # (relative, path, signature) of each file new or not as indexed
    gone: list[str]  # indexed, and no longer there
    unchanged: int
    stale: bool  # the rows stored are not the folders as looked at (no rows, or a folder's time now vouches)
    where: dict[str, tuple[Folder, int]] = field(default_factory=dict)  # each changed file's folder and place in it
    before: dict[str, Folder] = field(default_factory=dict)  # the folders as stored, by prefix

    def add(self, kb: KnowledgeBase, folder: Folder, indexes: range | list[int]) -> None:
        """Count these files of the folder as changed."""
        base = kb.entries_path / folder.prefix
        for i in indexes:
            relative = folder.prefix + folder.names[i]
            self.changed.append((relative, str(base / folder.names[i]), folder.signature(i)))
            self.where[relative] = (folder, i)

    def store(self, db: sqlite3.Connection, written: dict[str, Signature | None]) -> None:
        """Store the folders as looked at, each file the sync read (`written`) as read: None where it was gone."""
        gone: dict[int, set[int]] = {}  # id(folder) -> its places
        for relative, signature in written.items():
            spot = self.where.get(relative) or self._places.get(relative)
            if spot is None:
                continue
            folder, i = spot
            if signature is None:
                gone.setdefault(id(folder), set()).add(i)
            elif signature != folder.signature(i):
                folder.signatures[WIDTH * i : WIDTH * (i + 1)] = array("q", signature)
        for folder in self.folders:
            if id(folder) in gone:
                _leave_out(folder, gone[id(folder)])
        db.execute("DELETE FROM folder_looks")
        prefixes = {_encoded(folder.prefix) for folder in self.folders}
        db.executemany(
            "DELETE FROM folder_files WHERE folder = ?",
            [row for row in db.execute("SELECT folder FROM folder_files") if row[0] not in prefixes],
        )
        for folder in self.folders:
            _store_files(db, folder, self.before.get(folder.prefix))
        db.executemany(
            "INSERT INTO folder_looks (folder, ctime_ns, below) VALUES (?, ?, ?)",
            [(_encoded(folder.prefix), folder.ctime_ns, _joined(folder.below)) for folder in self.folders],
        )

    @cached_property
    def _places(self) -> dict[str, tuple[Folder, int]]:
        """Where every file is: for the unchanged files a sync reads again (those refused for their id)."""
        return {folder.prefix + name: (folder, i) for folder in self.folders for i, name in enumerate(folder.names)}


def look(kb: KnowledgeBase, db: sqlite3.Connection, *, every_folder: bool = False) -> Look:
    """Every entry file's signature, compared with the last full look's, or with the manifest if none is stored.
    `every_folder`: list each folder, even one whose time vouches for its names."""
    stored = {folder.prefix: folder for folder in _stored(db)}
    folders = list(_walk(kb, {} if every_folder else stored))
    if not stored:
        return _against_manifest(kb, db, folders)
    found = Look(folders, [], [], 0, stale=len(folders) != len(stored), before=dict(stored))
    for folder in folders:
        before = stored.pop(folder.prefix, None)
        if before is None:
            found.stale = True
            found.add(kb, folder, range(len(folder.names)))
            continue
        if (before.ctime_ns, before.below) != (folder.ctime_ns, folder.below):
            found.stale = True
        if before.names == folder.names:
            if before.signatures == folder.signatures:
                found.unchanged += len(folder.names)
                continue
            changed = _differing(before.signatures, folder.signatures)
        else:
            was = {name: before.signature(i) for i, name in enumerate(before.names)}
            changed = [i for i, name in enumerate(folder.names) if was.get(name) != folder.signature(i)]
            now = set(folder.names)
            found.gone += [folder.prefix + name for name in before.names if name not in now]
        found.stale = True
        found.unchanged += len(folder.names) - len(changed)
        found.add(kb, folder, changed)
    for before in stored.values():  # folders not there any more
        found.gone += [before.prefix + name for name in before.names]
    return found


def _differing(before: array, after: array, block: int = 512) -> list[int]:
    """The places whose signatures differ between two looks at the same names, compared a block of places at a time
    (one at a time, 100,000 took 0.1 s)."""
    old, new = before.tobytes(), after.tobytes()
    step = _BYTES * block
    places: list[int] = []
    for start in range(0, len(new), step):
        if old[start : start + step] != new[start : start + step]:
            first = start // _BYTES
            last = min(first + block, len(after) // WIDTH)
            places += [i for i in range(first, last) if _at(old, i) != _at(new, i)]
    return places


def _at(signatures: bytes, place: int) -> bytes:
    return signatures[_BYTES * place : _BYTES * (place + 1)]


def _against_manifest(kb: KnowledgeBase, db: sqlite3.Connection, folders: list[Folder]) -> Look:
    indexed = {row[0]: row[1:] for row in db.execute("SELECT path, size, mtime_ns, ctime_ns, inode FROM files")}
    found = Look(folders, [], [], 0, stale=True)
    for folder in folders:
        changed = [
            i for i, name in enumerate(folder.names) if indexed.pop(folder.prefix + name, None) != folder.signature(i)
        ]
        found.unchanged += len(folder.names) - len(changed)
        found.add(kb, folder, changed)
    found.gone = list(indexed)
    return found


def _walk(kb: KnowledgeBase, trusted: dict[str, Folder]) -> Iterator[Folder]:
    """Each folder the scan enters (KnowledgeBase.scan), in scan order, with its files' signatures;
    listed unless its time vouches for the names in `trusted`."""
    began = time.time_ns()
    top = str(kb.entries_path)
    for prefix, path, folder_stat, below in each_folder_once(top):
        if not S_ISDIR(folder_stat.st_mode):
            if path == top:
                raise NotADirectoryError(20, "Not a directory", path)
            continue
        before = trusted.get(prefix)
        if before is not None and before.ctime_ns == folder_stat.st_ctime_ns:
            folder = Folder(prefix, before.ctime_ns, before.names, before.below)
        else:
            try:
                with os.scandir(path) as listing:
                    items = sorted(listing, key=lambda item: item.name)
            except GONE:
                continue
            names, entered = entry_file_names(items)
            vouches = folder_stat.st_ctime_ns < began - SETTLED_NS and not any(item.is_symlink() for item in items)
            folder = Folder(prefix, folder_stat.st_ctime_ns if vouches else None, names, entered)
        if not _look_up(path, folder):
            continue
        yield folder
        below.extend(folder.below)


def _look_up(path: str, folder: Folder) -> bool:
    """Fill in the folder's signatures, dropping the names gone since it was listed; False if it is gone."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except GONE:
        return False
    try:
        if len(folder.names) >= HALVED_FROM and sys.platform == "linux" and threading.active_count() == 1:
            numbers = _halved(descriptor, folder.names)
        else:
            numbers = _sizes_and_times(descriptor, folder.names)
    finally:
        os.close(descriptor)
    folder.signatures = numbers
    if -1 in numbers[::WIDTH]:  # (rare: a name gone since the listing, or a folder now)
        _leave_out(folder, {i for i in range(len(folder.names)) if numbers[WIDTH * i] == -1})
    return True


def _sizes_and_times(descriptor: int, names: list[str]) -> array:
    """Each name's signature (looked up in the folder `descriptor`), one after the other: all -1 for a name gone,
    a link leading nowhere or a folder now."""
    numbers = array("q")
    add, stat = numbers.extend, os.stat
    for name in names:
        try:
            found = stat(name, dir_fd=descriptor)
        except OSError as exc:
            if not leads_nowhere(exc):
                raise
            add(GONE_SIGNATURE)
            continue
        if S_ISDIR(found.st_mode):
            add(GONE_SIGNATURE)
            continue
        add((found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino))
    return numbers


def _halved(descriptor: int, names: list[str]) -> array:
    """_sizes_and_times, the second half looked up by a copy of this process at the same time.

    Nearly all of a look is the system's (100,000 lookups: 0.5 s here, 0.3 s halved so). Threads would not do: each
    lookup hands Python's lock over, and two threads took twice as long as one.
    """
    half = len(names) // 2
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (a limit, memory): all here
        os.close(reading)
        os.close(writing)
        return _sizes_and_times(descriptor, names)
    if pid == 0:  # the copy: its half into the pipe, then gone at once (no exit handlers, no buffers flushed)
        status = 1
        try:
            os.close(reading)
            with open(writing, "wb") as pipe:
                pipe.write(_sizes_and_times(descriptor, names[half:]).tobytes())
            status = 0
        finally:
            os._exit(status)
    os.close(writing)
    try:
        numbers = _sizes_and_times(descriptor, names[:half])
        with open(reading, "rb", closefd=False) as pipe:
            copied = pipe.read()
    finally:
        os.close(reading)  # before waiting: a copy still writing then stops (its pipe is broken)
        os.waitpid(pid, 0)
    if len(copied) == _BYTES * (len(names) - half):
        numbers.frombytes(copied)
    else:  # the copy failed: here, then
        numbers.extend(_sizes_and_times(descriptor, names[half:]))
    return numbers


def _leave_out(folder: Folder, places: set[int]) -> None:
    """Drop these files from the folder (gone since they were listed)."""
    kept = [i for i in range(len(folder.names)) if i not in places]
    folder.names = [folder.names[i] for i in kept]
    folder.signatures = array("q", [number for i in kept for number in folder.signature(i)])
    folder.ctime_ns = None  # (it moved, or will)


def _stored(db: sqlite3.Connection) -> Iterator[Folder]:
    for prefix, ctime_ns, below, names, signatures in db.execute(
        "SELECT folder, l.ctime_ns, l.below, f.names, f.signatures "
        "FROM folder_looks l JOIN folder_files f USING (folder)"
    ):
        numbers = array("q")
        numbers.frombytes(signatures)
        yield Folder(_decoded(prefix), ctime_ns, _split(names), _split(below), numbers)


def _store_files(db: sqlite3.Connection, folder: Folder, before: Folder | None) -> None:
    """A folder's names and signatures: where only signatures changed, those bytes alone, in place."""
    key = _encoded(folder.prefix)
    if before is not None and before.names == folder.names:
        places = _differing(before.signatures, folder.signatures)
        if not places:
            return
        if in_place(db):
            (rowid,) = db.execute("SELECT rowid FROM folder_files WHERE folder = ?", [key]).fetchone()
            with db.blobopen("folder_files", "signatures", rowid) as blob:
                for i in places:
                    blob.seek(_BYTES * i)
                    blob.write(folder.signatures[WIDTH * i : WIDTH * (i + 1)].tobytes())
            return
    db.execute(
        "INSERT OR REPLACE INTO folder_files (folder, names, signatures) VALUES (?, ?, ?)",
        [key, _joined(folder.names), folder.signatures.tobytes()],
    )


def in_place(db: sqlite3.Connection) -> bool:
    """Whether SQLite's blob I/O is to be had (Python 3.11 on): else a changed folder's row is written whole."""
    return hasattr(db, "blobopen")


def _encoded(text: str) -> bytes:
    """A path or names as stored: bytes (made for any name; the scan now enters only names in UTF-8 text)."""
    return text.encode("utf-8", "surrogateescape")


def _decoded(stored: bytes) -> str:
    return stored.decode("utf-8", "surrogateescape")


def _joined(names: list[str]) -> bytes:
    return _encoded("\0".join(names))


def _split(names: bytes) -> list[str]:
    return _decoded(names).split("\0") if names else []
