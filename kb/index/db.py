"""The SQLite index: a derived cache of the entries, for structured questions. Schema in kb/index/schema.py and
docs/search.md.

One row per entry in `entries` with the fields people filter and sort on, plus normalised tables for tags, settings,
versions, metrics, timings, failures, links and accelerators, the rows the answers read (the board's, the releases'),
and views for the common questions. The index is a projection: an index of another format (kb.index.schema.FORMAT)
is never migrated but built again by the next sync. WAL mode and a busy timeout let readers and the (single) writer
work at the same time (but for a build from nothing, which kb.index.sync writes without a journal).
A database that cannot be opened is deleted and rebuilt: it holds nothing the entries do not.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from kb.errors import DISK_FULL, NOT_WRITABLE, KbError
from kb.index import fulltext, schema

DB_NAME = "index.db"
BUSY_TIMEOUT_MS = 30_000


def index_path(cache: Path) -> Path:
    return cache / DB_NAME


def connect(path: Path) -> sqlite3.Connection:
    """Open (making its tables if it is new) the index; a damaged file is replaced by a fresh one. In a folder kb
    cannot write (a read-only mount), the index is opened to read only, as it is (kb.index.sync checks it is current).

    Only damage does that: a busy, read-only or full disk is reported, and the index is left to the others using it.
    """
    if not os.access(path.parent, os.W_OK) and path.is_file():
        return connect_read_only(path)
    try:
        try:
            return _open(path)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            remove(path)
            return _open(path)
    except sqlite3.OperationalError as exc:
        raise storage_error(path, exc) from None


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open the index as it is, to read only (on a full disk or a read-only folder).

    Reading a WAL database makes its -shm file; where that cannot be written, the file is read as immutable
    (without what a write-ahead log left by a live writer holds: as stale as the rest).
    """
    from urllib.parse import quote

    for mode in ("mode=ro", "immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, isolation_level=None,
                                   check_same_thread=False)  # fmt: skip
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            fulltext.register(conn)
            conn.execute("SELECT count(*) FROM entries").fetchone()
            return conn
        except sqlite3.DatabaseError as exc:  # damaged, too: it cannot be rebuilt here
            failure = exc
    raise storage_error(path, failure) from None


def finished(path: Path) -> bool:
    """Whether the index at `path` is one a build of this format finished, and can be read as it is (when it cannot be
    brought up to date). A build that was killed leaves a file without its format, half written or empty."""
    try:
        conn = connect_read_only(path)
    except KbError:
        return False
    try:
        return stored_format(conn) == schema.FORMAT
    finally:
        conn.close()


def stored_format(db: sqlite3.Connection) -> str | None:
    """The format of the index as its build stored it; None for a build not finished, or an index from a kb from
    before the formats (which migrated its schema instead)."""
    try:
        row = db.execute("SELECT format FROM index_format").fetchone()
    except sqlite3.OperationalError:  # no such table
        return None
    return row[0] if row else None


def store_format(db: sqlite3.Connection) -> None:
    """Last in a build: the index is of this kb's format, and finished."""
    db.execute("DELETE FROM index_format")
    db.execute("INSERT INTO index_format (format) VALUES (?)", [schema.FORMAT])


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite found the file damaged ("malformed", "not a database"), not busy, full or read-only."""
    return type(exc) is sqlite3.DatabaseError  # its subclasses are the other failures (OperationalError...)


def remove(path: Path) -> None:
    """Delete the index with its write-ahead log: the next connect() starts a new one, and sync fills it."""
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)


class IndexUnwritable(KbError):
    """The index cannot be updated (a full disk, a read-only folder): what is there may still be read."""


def storage_error(path: Path, exc: BaseException) -> KbError:
    """A disk or lock problem with a cache file, as an error naming the file and what to do."""
    # SQLite says only "disk I/O error" or "database or disk is full"; over a file-size limit it is the I/O error
    code = getattr(exc, "errno", None)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if code in DISK_FULL or "disk" in reason:
        advice = "free some disk space"
    elif code in NOT_WRITABLE or "readonly" in reason:
        advice = f"make {path.parent} writable"
    elif "locked" in reason:
        return KbError(f"{path}: {reason}: another kb process is using it; retry when it is done")
    else:
        advice = "check the disk"
    kind = IndexUnwritable if advice != "check the disk" else KbError
    return kind(
        f"cannot update {path}: {reason}; the entries are safe: {advice}, then run the command again "
        f"(the cache {path.parent.name}/ holds only derived data and may be deleted)"
    )


# A build from nothing writes every entry at once. The indexes of the tables it only adds to, and the board's cells,
# cost less made once at its end, from the whole tables, than kept up row by row.
@contextlib.contextmanager
def loading_in_bulk(db: sqlite3.Connection) -> Iterator[None]:
    """Around the writing of every entry into an empty index, inside its transaction: the growing tables' indexes are
    dropped, and afterwards made again as the schema holds them, with the board's cells counted from its rows. The
    index is then as writing the entries one by one leaves it. On an exception nothing is made again: the caller
    rolls the transaction back (the schema with it), or removes a build's file."""
    marks = ", ".join("?" * len(schema.GROWING_TABLES))
    saved = db.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ({marks})",
        schema.GROWING_TABLES,
    ).fetchall()
    for name, _ in saved:
        db.execute(f"DROP INDEX {name}")
    yield
    count_cells(db)
    for _, sql in saved:
        db.execute(sql)


def count_cells(db: sqlite3.Connection, cells: set[tuple] | None = None) -> None:
    """The board's cells counted again from its rows: these (workload, backend, mode), or all of them."""
    columns = "workload, backend, mode, category, class"
    if cells is None:
        db.execute("DELETE FROM board_cells")
        db.execute(f"INSERT INTO board_cells SELECT {columns}, count(*) FROM board_rows GROUP BY {columns}")
        return
    key = "workload = ? AND backend IS ? AND mode IS ?"
    for cell in cells:
        db.execute(f"DELETE FROM board_cells WHERE {key}", cell)
        db.execute(
            f"INSERT INTO board_cells SELECT {columns}, count(*) FROM board_rows WHERE {key} GROUP BY {columns}", cell
        )


@contextlib.contextmanager
def reading(db: sqlite3.Connection) -> Iterator[None]:
    """Queries on an index found damaged only now (a page no sync reads): the file is removed, for the next
    command to rebuild, and the user told so."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        path = Path(db.execute("PRAGMA database_list").fetchone()[2])
        db.close()
        remove(path)
        raise KbError(f"{path}: {exc}; removed it: the next kb command rebuilds it from the entries") from None


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    fulltext.register(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    # Before the log: a page size is set by the first write of a new file (a WAL file's included), never after.
    conn.execute(f"PRAGMA page_size = {schema.PAGE_SIZE}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable at checkpoints, never corrupt
    if _is_empty(conn):  # new: its tables, in one transaction
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _is_empty(conn):  # (unless another process made them first)
                for statement in schema.statements():
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return conn


def _is_empty(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
