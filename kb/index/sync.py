"""Bring the index up to date with the entries folder, cheaply and safely.

A manifest (the `files` table: each file's signature, kb.index.signature, and sha256) says what was indexed. A file
whose signature matches is not read at all; one whose signature moved is hashed, and re-parsed only when its content
changed (a git checkout resets mtimes without changing content). `changes` finds which files to read: those kb
watch's journal names, else every file, compared with the signatures the last full look stored (kb.index.look), so
that the manifest is read back only for what changed. Added, edited, deleted and renamed files are all picked up, so
an entry edited by hand or pulled from git is searchable at once. One writer at a time (a lock file in the cache);
readers never wait for it, but for a build from nothing, written without a journal. The entries' rows, the rows
derived from them, their words (the full-text table) and the manifest change in one transaction, written in batches
as the files are parsed, so that memory does not grow with the knowledge base; a sync that finds nothing changed
writes nothing (but the looks, when they were not as stored).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from stat import S_ISDIR
from typing import TYPE_CHECKING, Any

from kb.errors import KbError, Problem
from kb.index import fulltext, look, schema, signature, watch
from kb.index.db import (
    connect,
    connect_read_only,
    count_cells,
    finished,
    index_path,
    is_damage,
    loading_in_bulk,
    remove,
    storage_error,
    store_format,
    stored_format,
)
from kb.index.rows import CHILD_COLUMNS, DERIVED_COLUMNS, ENTRY_COLUMNS, NUMBERED, Rows
from kb.index.signature import Signature, as_stored
from kb.store.knowledge_base import KnowledgeBase, is_text_name
from kb.store.reading import leads_nowhere

if TYPE_CHECKING:
    from kb.index import parse

LOCK_NAME = "index.lock"
# Where earlier versions of kb kept a Whoosh index: a derived cache, removed when found.
RETIRED_FOLDERS = ("whoosh",)
# A sync that indexes this many entries is a build: the full-text table's segments are merged after it.
BULK_ENTRIES = 2000
# Parsed entries are written this many at a time, inside the sync's one transaction.
WRITE_BATCH = 500
POSITION_SLACK = 16 * 1024  # journal bytes a sync may leave to read again (about 500 commands' cookies)
LOCK_NOTICE_S = 10.0  # of waiting for another process's lock before `waiting` is told
LOCK_POLL_S = 0.05
# Told the lock's path when a sync has waited LOCK_NOTICE_S for another process that is updating the index.
Waiting = Callable[[Path], None]
# Given the files a sync reads and its label ("Indexing"), yields them back as each is read: how a caller shows the
# progress of a long sync (the CLI passes kb.terminal.progress.counted). Without one, a sync prints nothing.
Counting = Callable[[list[Any], str], Iterable[Any]]
_MANIFEST = "path, size, mtime_ns, ctime_ns, inode, sha256, entry_id"  # the columns of _Indexed, after the path


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    repaired: str | None = None  # the damage that made this sync rebuild the indexes from nothing
    stale: str | None = None  # why the index could not be updated, when it is read as it was (kb.index.prepare)
    read_only: bool = False  # the cache could not be written, and the index was found current without writing

    def summary(self) -> str:
        broken = f", {len(self.problems)} problems" if self.problems else ""
        rebuilt = f"; rebuilt the indexes from the entries, one was damaged ({self.repaired})" if self.repaired else ""
        return (
            f"{self.added} added, {self.updated} updated, {self.removed} removed, {self.unchanged} unchanged"
            f"{broken} in {self.seconds:.2f} s{rebuilt}"
        )


@dataclass
class _Indexed:
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    sha256: str
    entry_id: str | None


def sync(
    kb: KnowledgeBase,
    *,
    rebuild: bool = False,
    every_folder: bool = False,
    waiting: Waiting | None = None,
    progress: Counting | None = None,
) -> SyncReport:
    """Update the index from the entries folder; `rebuild` starts from nothing. `every_folder`: a full look lists
    every folder, even one whose time vouches for the names it had (kb.index.look). `waiting` is told (once, with
    the lock's path) when the sync has waited LOCK_NOTICE_S for another process that is updating the index.
    `progress` is handed the files it reads (see Counting): without it the sync prints nothing.

    An index found damaged (or removed while in use) is rebuilt at once; a full or read-only disk is a KbError
    that names the file: the entries are untouched, and the next sync catches up.
    """
    started = time.perf_counter()
    cache = kb.ensure_cache()
    if not rebuild and not os.access(cache, os.W_OK):  # a read-only mount: no lock to take, nothing to write
        report = _verified(kb, index_path(cache))
        report.seconds = time.perf_counter() - started
        return report
    with _storage_errors(index_path(cache)), _exclusive(cache / LOCK_NAME, waiting):
        try:
            report = _update(kb, rebuild=rebuild, every_folder=every_folder, progress=progress)
        except Exception as exc:
            if not _is_damage(exc):
                raise
            report = _update(kb, rebuild=True, every_folder=every_folder, progress=progress)
            report.repaired = str(exc)
    report.seconds = time.perf_counter() - started
    return report


def _update(kb: KnowledgeBase, *, rebuild: bool, every_folder: bool, progress: Counting | None) -> SyncReport:
    cache = kb.ensure_cache()  # again: another process may have deleted it
    for retired in RETIRED_FOLDERS:
        if (cache / retired).is_dir():
            import shutil

            shutil.rmtree(cache / retired, ignore_errors=True)
    if rebuild:
        remove(index_path(cache))
    db = connect(index_path(cache))
    try:
        fresh = stored_format(db) != schema.FORMAT
        # New, or of another format (another kb's schema, rows or entry schema; a build not finished): never migrated,
        # built again from the entries, with the build's progress.
        if fresh and not rebuild:
            db.close()
            return _update(kb, rebuild=True, every_folder=every_folder, progress=progress)
        unjournaled = fresh and _without_journal(db)
        position = _watch_position(db)
        report = SyncReport()
        try:
            _sync(kb, db, report, position, watch.changes(cache, position), every_folder, fresh, unjournaled, progress)
        except BaseException:
            if fresh:  # half a build (written without a journal to roll it back with, perhaps): none
                db.close()
                remove(index_path(cache))
            raise
        if unjournaled:
            with contextlib.suppress(sqlite3.OperationalError):  # a reader has it open: the next connect() does it
                db.execute("PRAGMA journal_mode = WAL")
        if fresh:  # last: a build that does not get here (killed) is started over by the next sync
            store_format(db)
    finally:
        db.close()
    return report


def _verified(kb: KnowledgeBase, database: Path) -> SyncReport:
    """Without writing anything: whether every entry file is as the index holds it (a read-only knowledge base, a
    colleague's clone mounted so). If not, or the index is not one this kb can read, the IndexUnwritable error that
    kb.index.prepare may read the index as it was after."""
    unwritable = OSError(errno.EROFS, os.strerror(errno.EROFS))
    if not finished(database):
        raise storage_error(database, unwritable)
    db = connect_read_only(database)
    try:
        with _storage_errors(database):
            found = changes(kb, db, None)
    finally:
        db.close()
    if found.candidates or found.gone:
        changed = len(found.candidates) + len(found.gone)
        files = "1 entry file" if changed == 1 else f"{changed} entry files"
        raise storage_error(database, OSError(errno.EROFS, f"{unwritable.strerror}, and {files} changed since"))
    return SyncReport(unchanged=found.unchanged, read_only=True)


def _without_journal(db: sqlite3.Connection) -> bool:
    """Whether a build from nothing could be written once, without a journal: through the write-ahead log, every
    page was written twice, and a build wrote 4.9 GB for an index of 1.4 GB at 100,000 entries. Not when another
    connection has the new file open already; the build then goes through the log as any sync."""
    try:
        return db.execute("PRAGMA journal_mode = OFF").fetchone()[0] == "off"
    except sqlite3.OperationalError:
        return False


def _is_damage(exc: BaseException) -> bool:
    return isinstance(exc, FileNotFoundError) or is_damage(exc)


@contextlib.contextmanager
def _storage_errors(database: Path) -> Iterator[None]:
    """A full or read-only disk, or a busy database, as one line naming the file instead of a traceback."""
    try:
        yield
    except sqlite3.Error as exc:
        raise storage_error(database, exc) from None
    except OSError as exc:
        path = Path(exc.filename) if exc.filename else database.parent
        if not path.is_relative_to(database.parent):  # an entry's file or folder, not the cache
            raise KbError(
                f"cannot read {path}: {exc.strerror or exc}; fix it or move it out of the entries folder, "
                "then run the command again"
            ) from None
        raise storage_error(path, exc) from None


def _watch_position(db: sqlite3.Connection) -> tuple[str, int] | None:
    row = db.execute("SELECT token, offset FROM watch_position").fetchone()
    return (row[0], row[1]) if row else None


@dataclass
class Changes:
    """Which entry files a sync reads, and which went."""

    candidates: list[tuple[str, Path]]  # (relative, path) of each file to read, in scan order
    gone: list[str]  # indexed, and no longer there
    again: set[str]  # of the candidates, those refused for their id before, read again as if new
    unchanged: int  # files as indexed, not read
    full: look.Look | None  # the full look, when every file was looked at (no journal to vouch)


def changes(
    kb: KnowledgeBase, db: sqlite3.Connection, watched: watch.Changes | None, *, every_folder: bool = False
) -> Changes:
    """The entry files that changed since the index was brought up to date: those `kb watch`'s journal names
    (`watched`), else every file's signature compared with the stored ones (kb.index.look)."""
    candidates: list[tuple[str, Path]] = []
    full: look.Look | None = None
    if watched is None or watched.paths is None:  # every file
        full = look.look(kb, db, every_folder=every_folder)
        candidates = [(relative, Path(path)) for relative, path, _ in full.changed]
        gone = full.gone
        unchanged = full.unchanged
    else:
        # A journal from an older kb watch may hold names that are not UTF-8 text, which no index row can hold.
        ordered = sorted((relative for relative in watched.paths if is_text_name(relative)), key=kb.scan_order)
        signatures = {row[0]: row[1:5] for row in _manifest(db, ordered)}
        unchanged = db.execute("SELECT count(*) FROM files").fetchone()[0] - len(signatures)
        seen: set[str] = set()
        for relative in ordered:
            path = str(kb.entries_path / relative)
            if not kb.is_entry_path(relative) or (signature := _signature(path)) is None:
                continue
            seen.add(relative)
            if signatures.get(relative) == signature:  # as git's index: same size, times and inode
                unchanged += 1
            else:
                candidates.append((relative, Path(path)))
        gone = [relative for relative in signatures if relative not in seen]
    # A file refused because another file held its id is read again whenever a file changed or went: the other one
    # may have (deleted, or its id changed), and the refused file itself is unchanged, so nothing else would read it.
    again: set[str] = set()
    if candidates or gone:
        listed = {relative for relative, _ in candidates}
        for relative in _refused_for_their_id(db):
            if relative in listed:  # touched or changed as well: parsed all the same, as its id may be free now
                again.add(relative)
                continue
            path = str(kb.entries_path / relative)
            if relative in gone or _signature(path) is None:
                continue
            candidates.append((relative, Path(path)))
            again.add(relative)
            unchanged -= 1  # counted above: its size and time are as indexed
    return Changes(candidates, gone, again, unchanged, full)


def _sync(
    kb: KnowledgeBase,
    db: sqlite3.Connection,
    report: SyncReport,
    position: tuple[str, int] | None,
    watched: watch.Changes | None,
    every_folder: bool,
    fresh: bool,
    unjournaled: bool,
    progress: Counting | None,
) -> None:
    """Bring the indexes up to date with every entry file, or only with those `watched` names as changed: which
    files changed (`changes`), their reading and the writing of their rows in batches (`_read`), then the manifest,
    problems and looks (`_finish`), all in one transaction. `fresh`: the index is empty (a build from nothing).
    `unjournaled`: written without a journal, so that a failure cannot be rolled back (the caller removes the file)."""
    began = time.time_ns()  # what a file's status-change time is told against (kb.index.signature.as_stored)
    found = changes(kb, db, watched, every_folder=every_folder)
    report.unchanged = found.unchanged
    now = (watched.token, watched.offset) if watched else None
    # Nothing changed: no write transaction at all. After a full look (the journal could not vouch) the position
    # is stored, or every command would look at every file again.
    kept = now == position or (found.full is None and _close_enough(now, position))
    if not found.candidates and not found.gone and kept and (found.full is None or not found.full.stale):
        return
    # The whole manifest row of what changed or went; which path holds an id, from the manifest as it was.
    paths = [*found.gone, *(relative for relative, _ in found.candidates)]
    known = {row[0]: _Indexed(*row[1:]) for row in _manifest(db, paths)}
    # Which file holds an entry's id in the index: none in an empty one, so a build skips two lookups per entry.
    path_of = (lambda _: None) if fresh else partial(_indexed_path, db)
    # gone: indexed and not there (whatever is indexed and not in `leaving` still is)
    out = _Outcome(found.gone, {relative for relative, _ in found.candidates}, set(found.gone))
    db.execute("PRAGMA foreign_keys = OFF")  # _delete keeps the normalised tables as the schema's cascade would
    db.execute("BEGIN IMMEDIATE")
    try:
        # An empty index has its growing tables' indexes and the board's cells made at the end (db.loading_in_bulk).
        with loading_in_bulk(db) if fresh else contextlib.nullcontext():
            _read(kb, db, found, known, path_of, began, out, progress)
        _finish(db, report, out, known, path_of, fresh)
        if found.full is not None:  # the folders as they are now, every file looked at
            found.full.store(db, {row[0]: row[1:5] for row in out.files} | dict.fromkeys(out.vanished))
        elif out.files or out.gone:  # the manifest changed without a full look: the looks no longer stand for it
            db.execute("DELETE FROM folder_looks")
        if now != position:
            db.execute("DELETE FROM watch_position")
            if now:
                db.execute("INSERT INTO watch_position (token, offset) VALUES (?, ?)", now)
        db.execute("COMMIT")
    except BaseException:
        if not unjournaled:
            db.execute("ROLLBACK")
        raise


@dataclass
class _Outcome:
    """What a sync's reading decided, for its end to write: the manifest's rows, the problems, the ids written."""

    gone: list[str]  # indexed and no longer there (grows with the files that vanished while being read)
    moving: set[str]  # read, and perhaps no longer holding the entry they held
    leaving: set[str]  # indexed and not there
    files: list[tuple[str, int, int, int, int, str, str | None]] = field(default_factory=list)  # manifest rows
    vanished: list[str] = field(default_factory=list)  # gone between the look and the read
    upserts: dict[str, str] = field(default_factory=dict)  # entry id -> path
    problems: dict[str, list[Problem]] = field(default_factory=dict)
    cells: set[tuple] = field(default_factory=set)  # (workload, backend, mode) of the board rows written or deleted
    touched: int = 0  # read, and found as indexed


def _read(
    kb: KnowledgeBase,
    db: sqlite3.Connection,
    found: Changes,
    known: dict[str, _Indexed],
    path_of: Callable[[str], str | None],
    began: int,
    out: _Outcome,
    progress: Counting | None,
) -> None:
    """Read the changed files (in this process, or in worker processes for a large batch: kb.index.parse) and write
    their rows in batches: a build never holds every entry in memory."""
    from kb.index import parse  # only now: a command that finds nothing changed does without hashing or parsing

    jobs = [
        (path, kb.root, known[relative].sha256 if relative in known and relative not in found.again else None)
        for relative, path in found.candidates
    ]
    batch: list[tuple[str, Rows]] = []  # parsed, not yet written
    candidates = found.candidates if progress is None else progress(found.candidates, "Indexing")
    for (relative, path), read in zip(candidates, parse.read_all(jobs), strict=True):
        rows = _take(kb, relative, path, read, known, relative in found.again, path_of, began, out)
        if rows is not None:
            batch.append((relative, rows))
            if len(batch) >= WRITE_BATCH:
                _write(db, batch, out.cells)
                batch = []
    _write(db, batch, out.cells)


def _take(
    kb: KnowledgeBase,
    relative: str,
    path: Path,
    read: parse.Read,
    known: dict[str, _Indexed],
    again: bool,
    path_of: Callable[[str], str | None],
    began: int,
    out: _Outcome,
) -> Rows | None:
    """What one file read comes to: its manifest row and problems in `out`, and the rows to write, if any."""
    if read.gone:  # gone between the look and the read
        out.vanished.append(relative)
        if relative in known:
            out.gone.append(relative)
            out.leaving.add(relative)
        return None
    stored = as_stored(read.signature, began)
    if not read.digest:  # refused unread
        out.problems[relative] = read.problems
        out.files.append((relative, *stored, "", None))
        return None
    indexed = known.get(relative) if not again else None
    # Touched, not changed: it keeps its entry, unless a file before it in this sync took the entry's id (then, as
    # if it had been parsed, the first one keeps the id).
    if indexed is not None and indexed.sha256 == read.digest:
        taker = out.upserts.get(indexed.entry_id) if indexed.entry_id else None
        if taker is None:
            out.files.append((relative, *stored, read.digest, indexed.entry_id))
            out.moving.discard(relative)
            out.touched += 1
        else:
            out.problems[relative] = [_id_taken(kb, path, None, indexed.entry_id, taker)]
            out.files.append((relative, *stored, read.digest, None))
        return None
    rows, problems = read.rows, read.problems
    if rows is not None:
        other = out.upserts[rows.id] if rows.id in out.upserts else path_of(rows.id)
        still_there = other not in out.leaving and (other not in out.moving or rows.id in out.upserts)
        if other is not None and other != relative and still_there:
            problems = [_id_taken(kb, path, rows.id_line, rows.id, other)]
            rows = None
    if problems:
        out.problems[relative] = problems
    out.files.append((relative, *stored, read.digest, rows.id if rows else None))
    if rows is not None:
        out.upserts[rows.id] = relative
    return rows


def _finish(
    db: sqlite3.Connection,
    report: SyncReport,
    out: _Outcome,
    known: dict[str, _Indexed],
    path_of: Callable[[str], str | None],
    fresh: bool,
) -> None:
    """After the rows: the entries no file holds any more deleted, the board's cells counted again, the manifest and
    the problems written, and the report told (the manifest as it was says which ids are new)."""
    before = {known[r].entry_id for r in [*out.gone, *out.moving] if r in known and known[r].entry_id}
    deletes = before - set(out.upserts)
    report.unchanged += out.touched
    report.added = len([entry_id for entry_id in out.upserts if path_of(entry_id) is None])
    report.updated = len(out.upserts) - report.added
    report.removed = len(deletes)
    report.problems = [p for found in out.problems.values() for p in found]
    _delete(db, list(deletes), out.cells)
    if out.cells and not fresh:  # (a build counts every cell at its end)
        count_cells(db, out.cells)
    db.executemany("DELETE FROM files WHERE path = ?", [(r,) for r in out.gone])
    db.executemany("DELETE FROM problems WHERE path = ?", [(r,) for r in [*out.gone, *out.moving]])
    db.executemany(f"INSERT OR REPLACE INTO files ({_MANIFEST}) VALUES (?, ?, ?, ?, ?, ?, ?)", out.files)
    db.executemany(
        "INSERT INTO problems (path, line, field, message) VALUES (?, ?, ?, ?)",
        [(r, p.line, p.field, p.message) for r, found in out.problems.items() for p in found],
    )
    if len(out.upserts) >= BULK_ENTRIES:
        fulltext.optimize(db)


def _id_taken(kb: KnowledgeBase, path: Path, line: int | None, entry_id: str, holder: str) -> Problem:
    """The problem of a file whose entry's id the file `holder` (relative to the entries folder) has."""
    message = f"the id {entry_id} is also used by {kb.entries_path / holder}; give this one a new id"
    return Problem(path, line, "id", message)


def _signature(path: str) -> Signature | None:
    """A file's signature; None when it is gone (deleted or renamed since it was listed: not damage), a link
    leading nowhere, or a folder now (a journaled name)."""
    try:
        found = os.stat(path)
    except OSError as exc:
        if not leads_nowhere(exc):
            raise
        return None
    return None if S_ISDIR(found.st_mode) else signature.of(found)


def _close_enough(now: tuple[str, int] | None, position: tuple[str, int] | None) -> bool:
    """Whether the stored journal position may stay a little behind where a sync read the journal up to (from that
    position, so in the same journal).

    With kb watch every command adds its cookie to the journal, so the position moves though no file changed;
    storing it each time took a write transaction per command. The next sync reads again from the stored
    position, and what it finds again has been indexed already (its files' signatures match).
    """
    return now is not None and position is not None and 0 <= now[1] - position[1] < POSITION_SLACK


def _write(db: sqlite3.Connection, batch: list[tuple[str, Rows]], cells: set[tuple]) -> None:
    """The rows of these parsed entries, with the rows derived from them, in one batch, in place of the ones their ids
    had (a trigger drops those's words); adds the board cells they are counted in to `cells`."""
    # Only the ids indexed already: a build deletes nothing, where each of eight tables was asked for each entry.
    _delete(db, [entry_id for entry_id, _ in _rowids(db, [rows.id for _, rows in batch])], cells)
    _insert(db, "entries", ("path", *ENTRY_COLUMNS), [(relative, *rows.entry) for relative, rows in batch])
    rowids = dict(_rowids(db, [rows.id for _, rows in batch]))
    fulltext.insert(db, [(rowids[rows.id], rows.packed, *rows.words) for _, rows in batch])
    for table, columns in CHILD_COLUMNS.items():  # each row's entry id swapped for the entry's number
        numbered = [(rowids[row[0]], *row[1:]) for _, rows in batch for row in rows.children.get(table, ())]
        _insert(db, table, columns, numbered)
    for table, columns in DERIVED_COLUMNS.items():
        derived = [row for _, rows in batch for row in rows.children.get(table, ())]
        if table in NUMBERED:  # the entry's number before its id
            _insert(db, table, ("entry", *columns), [(rowids[row[0]], *row) for row in derived])
        else:
            _insert(db, table, columns, derived)
    cells.update(row[2:5] for _, rows in batch for row in rows.children.get("board_rows", ()))


def _delete(db: sqlite3.Connection, ids: list[str], cells: set[tuple]) -> None:
    """These entries with their rows in the normalised and derived tables, adding the board cells they were counted
    in to `cells`. A sync writes with the foreign keys off (looking up the entry of each of an entry's thirty-odd
    rows was a tenth of a build's writing), so it deletes those rows itself, as the schema's ON DELETE CASCADE
    would; a trigger drops the entries' words."""
    numbers = [(number,) for _, number in _rowids(db, ids)]
    for chunk in _chunks([number for (number,) in numbers]):
        marks = ", ".join("?" * len(chunk))
        cells.update(db.execute(f"SELECT workload, backend, mode FROM board_rows WHERE entry IN ({marks})", chunk))
    for table in (*CHILD_COLUMNS, *NUMBERED):
        db.executemany(f"DELETE FROM {table} WHERE entry = ?", numbers)
    marks = [(entry_id,) for entry_id in ids]
    for table in set(DERIVED_COLUMNS) - set(NUMBERED):
        db.executemany(f"DELETE FROM {table} WHERE entry_id = ?", marks)
    db.executemany("DELETE FROM entries WHERE id = ?", marks)


def _rowids(db: sqlite3.Connection, ids: list[str]) -> list[tuple[str, int]]:
    """Each entry's (id, rowid), for the entries of these ids."""
    return [
        row
        for chunk in _chunks(ids)
        for row in db.execute(f"SELECT id, rowid FROM entries WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
    ]


def _refused_for_their_id(db: sqlite3.Connection) -> list[str]:
    """The files indexed without an entry because of their id (another file's, or not an id at all)."""
    return [row[0] for row in db.execute("SELECT DISTINCT path FROM problems WHERE field = 'id' ORDER BY path")]


def _indexed_path(db: sqlite3.Connection, entry_id: str) -> str | None:
    row = db.execute("SELECT path FROM files WHERE entry_id = ?", [entry_id]).fetchone()
    return row[0] if row else None


def _manifest(db: sqlite3.Connection, paths: list[str]) -> list[tuple]:
    """The manifest rows (_MANIFEST) of these paths, those it has."""
    return [
        row
        for chunk in _chunks(paths)
        for row in db.execute(f"SELECT {_MANIFEST} FROM files WHERE path IN ({', '.join('?' * len(chunk))})", chunk)
    ]


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    """Pieces small enough for one statement's parameters."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _insert(db: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    if rows:
        db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)


def stored_problems(kb: KnowledgeBase, db: sqlite3.Connection | None = None) -> list[Problem]:
    """The problems the last sync found, for reporting without parsing again (from `db` when given)."""
    own = db is None
    db = connect(index_path(kb.ensure_cache())) if db is None else db
    try:
        rows = db.execute("SELECT path, line, field, message FROM problems ORDER BY path, line").fetchall()
    finally:
        if own:
            db.close()
    return [Problem(kb.entries_path / path, line, field, message) for path, line, field, message in rows]


@contextlib.contextmanager
def _exclusive(path: Path, waiting: Waiting | None) -> Iterator[None]:
    """One indexer at a time; a second waits (it will then find little left to do).

    It waits as long as the holder lives: the kernel drops the lock when its process ends, however it ends,
    so a wait can only be long, never stale (a deadline made busy machines fail commands that would have
    succeeded). A long wait is told to `waiting` once.
    """
    with open(path, "a") as handle:
        waited = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and time.monotonic() - waited > LOCK_NOTICE_S:
                    if waiting is not None:
                        waiting(path)
                    told = True
                time.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
