"""The SQLite index: a derived cache of the entries, for structured questions. Schema in docs/search.md.

One row per entry in `entries` with the fields people filter and sort on, plus normalised tables for
tags, settings, versions, metrics, timings, failures, links and accelerators, and views for the common
questions. The schema changes through an ordered list of migrations, applied whenever the database is
opened. WAL mode and a busy timeout let readers and the (single) writer work at the same time (but for a build
from nothing, which kb.index.sync writes without a journal).
A database that cannot be opened is deleted and rebuilt: it holds nothing the entries do not.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import DISK_FULL, NOT_WRITABLE, KbError

if TYPE_CHECKING:
    from sqlite_utils import Database

DB_NAME = "index.db"
BUSY_TIMEOUT_MS = 30_000
MIGRATION_SET = "kb.index"


def _script(db: Database, sql: str) -> None:
    """Run several statements inside the migration's transaction (executescript would commit it early)."""
    for statement in sql.split(";\n"):
        if statement.strip():
            db.execute(statement)


def m001_initial(db: Database) -> None:
    _script(
        db,
        """
        CREATE TABLE entries (
            id TEXT PRIMARY KEY,
            path TEXT NOT NULL,
            title TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT,
            recorded TEXT NOT NULL,
            author TEXT,
            backend TEXT,
            mode TEXT,
            workload TEXT,
            task TEXT,
            model TEXT,
            source TEXT,
            host TEXT,
            failure_class TEXT,
            wall_s REAL,
            compile_s REAL,
            first_step_s REAL,
            step_s_median REAL,
            git_commit TEXT,
            front_matter TEXT NOT NULL
        );
        CREATE INDEX entries_recorded ON entries(recorded);
        CREATE INDEX entries_workload_backend ON entries(workload, backend, mode, recorded);
        CREATE INDEX entries_status ON entries(status);
        CREATE INDEX entries_failure ON entries(failure_class);
        CREATE TABLE files (
            path TEXT PRIMARY KEY,
            entry_id TEXT,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            sha256 TEXT NOT NULL
        );
        CREATE INDEX files_entry ON files(entry_id);
        CREATE TABLE problems (path TEXT NOT NULL, line INTEGER, field TEXT, message TEXT NOT NULL);
        CREATE INDEX problems_path ON problems(path);
        CREATE TABLE tags (entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE, tag TEXT NOT NULL);
        CREATE INDEX tags_tag ON tags(tag, entry_id);
        CREATE TABLE settings (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            name TEXT NOT NULL, value TEXT, number REAL
        );
        CREATE INDEX settings_name ON settings(name, number);
        CREATE TABLE versions (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            package TEXT NOT NULL, version TEXT NOT NULL
        );
        CREATE INDEX versions_package ON versions(package, version, entry_id);
        CREATE TABLE metrics (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            name TEXT NOT NULL, value REAL, unit TEXT, phase TEXT, better TEXT
        );
        CREATE INDEX metrics_name ON metrics(name, value);
        CREATE TABLE timings (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            name TEXT NOT NULL, seconds REAL
        );
        CREATE INDEX timings_name ON timings(name, seconds);
        CREATE TABLE failures (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            class TEXT, message TEXT, explanation TEXT, phase TEXT, assigned TEXT
        );
        CREATE INDEX failures_class ON failures(class);
        CREATE TABLE links (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            role TEXT NOT NULL, target TEXT NOT NULL
        );
        CREATE INDEX links_target ON links(target);
        CREATE TABLE accelerators (
            entry_id TEXT NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            vendor TEXT, name TEXT, count INTEGER, memory_gb REAL
        );
        CREATE INDEX tags_entry ON tags(entry_id);
        CREATE INDEX settings_entry ON settings(entry_id);
        CREATE INDEX versions_entry ON versions(entry_id);
        CREATE INDEX metrics_entry ON metrics(entry_id);
        CREATE INDEX timings_entry ON timings(entry_id);
        CREATE INDEX failures_entry ON failures(entry_id);
        CREATE INDEX links_entry ON links(entry_id);
        CREATE INDEX accelerators_entry ON accelerators(entry_id);
        -- The newest run of each workload on each backend and mode: what a comparison starts from.
        CREATE VIEW latest_runs AS
            SELECT * FROM entries e
            WHERE kind = 'run' AND recorded = (
                SELECT MAX(recorded) FROM entries x
                WHERE x.kind = 'run' AND x.workload IS e.workload AND x.backend IS e.backend AND x.mode IS e.mode
            );
        -- Runs that did not complete, with what went wrong.
        CREATE VIEW failed_runs AS
            SELECT e.id, e.recorded, e.workload, e.backend, e.mode, e.status, f.class, f.message, f.explanation
            FROM entries e JOIN failures f ON f.entry_id = e.id
            WHERE e.status IN ('failed', 'killed', 'interrupted');
        -- One row per run and metric, for charts and pivots.
        CREATE VIEW run_metrics AS
            SELECT e.id, e.recorded, e.workload, e.backend, e.mode, m.name AS metric, m.value, m.unit, m.better
            FROM entries e JOIN metrics m ON m.entry_id = e.id;
        """,
    )


def m002_watch_position(db: Database) -> None:
    # How far into `kb watch`'s journal the files table is up to date (kb/index/watch.py): at most one row.
    db.execute("CREATE TABLE watch_position (token TEXT NOT NULL, offset INTEGER NOT NULL)")


def _read_every_entry_again(db: Database) -> None:
    """The next sync reads every entry file again, each one differing from its manifest row, and still removes
    the entries of files that went meanwhile (an emptied manifest left those in the index for good)."""
    db.execute("UPDATE files SET size = -1, sha256 = ''")
    db.execute("DELETE FROM watch_position")


def m003_fulltext(db: Database) -> None:
    # The words of each entry in an FTS5 table (kb/index/fulltext.py), filled as the next sync reads every entry.
    from kb.index.fulltext import schema_sql

    for statement in schema_sql():
        db.execute(statement)
    _read_every_entry_again(db)


# What the board reads of an entry, kept by triggers as the entries change, so that `kb board` reads one row per
# cell and category instead of every entry: board_rows, one narrow row per run, report and coverage entry of a
# workload (its category as the board counts it), and board_cells, how many rows each (workload, backend, mode,
# category, failure class) holds. Filled here from the entries an index already holds.
_CATEGORY = (
    "CASE WHEN {e}.kind = 'coverage' THEN 'coverage' WHEN {e}.kind = 'report' OR {e}.source IS 'reported' "
    "THEN 'report' WHEN {e}.status = 'completed' THEN 'completed' ELSE 'other' END"
)
_BOARD_ROW = (
    "INSERT INTO board_rows SELECT {e}.id, {e}.recorded, {e}.workload, {e}.backend, {e}.mode, {e}.kind, {e}.status, "
    f"{_CATEGORY}, CASE WHEN {_CATEGORY} = 'other' THEN COALESCE({{e}}.failure_class, {{e}}.status, 'unknown') END "
    "{source} WHERE {e}.workload IS NOT NULL AND {e}.kind IN ('run', 'report', 'coverage')"
)
_CELL = (
    "workload = {row}.workload AND backend IS {row}.backend AND mode IS {row}.mode AND category = {row}.category "
    "AND class IS {row}.class"
)


def m004_board(db: Database) -> None:
    added = _BOARD_ROW.format(e="NEW", source="")
    for statement in (
        """CREATE TABLE board_rows (
            entry_id TEXT PRIMARY KEY, recorded TEXT NOT NULL, workload TEXT NOT NULL, backend TEXT, mode TEXT,
            kind TEXT NOT NULL, status TEXT,
            category TEXT NOT NULL, -- completed or other (measured runs), report, coverage
            class TEXT -- a measured run that did not complete: its failure class, else its status
        )""",
        "CREATE INDEX board_rows_newest ON board_rows(workload, backend, mode, category, recorded, entry_id)",
        "CREATE INDEX board_rows_failures ON board_rows(workload, backend, mode, class, recorded, entry_id) "
        "WHERE class IS NOT NULL",
        "CREATE TABLE board_cells (workload TEXT NOT NULL, backend TEXT, mode TEXT, category TEXT NOT NULL, "
        "class TEXT, n INTEGER NOT NULL)",
        "CREATE INDEX board_cells_key ON board_cells(workload, backend, mode, category, class)",
        f"CREATE TRIGGER board_entry_added AFTER INSERT ON entries BEGIN {added}; END",
        "CREATE TRIGGER board_entry_removed AFTER DELETE ON entries BEGIN "
        "DELETE FROM board_rows WHERE entry_id = OLD.id; END",
        "CREATE TRIGGER board_entry_changed AFTER UPDATE ON entries BEGIN "
        f"DELETE FROM board_rows WHERE entry_id = OLD.id; {added}; END",
        "CREATE TRIGGER board_row_added AFTER INSERT ON board_rows BEGIN "
        "INSERT INTO board_cells SELECT NEW.workload, NEW.backend, NEW.mode, NEW.category, NEW.class, 0 "
        f"WHERE NOT EXISTS (SELECT 1 FROM board_cells WHERE {_CELL.format(row='NEW')}); "
        f"UPDATE board_cells SET n = n + 1 WHERE {_CELL.format(row='NEW')}; END",
        "CREATE TRIGGER board_row_removed AFTER DELETE ON board_rows BEGIN "
        f"UPDATE board_cells SET n = n - 1 WHERE {_CELL.format(row='OLD')}; "
        f"DELETE FROM board_cells WHERE n <= 0 AND {_CELL.format(row='OLD')}; END",
        # The releases (kb release) the board's checklist compares with, found without reading every entry.
        "CREATE INDEX entries_releases ON entries(recorded, id) WHERE kind = 'release'",
        _BOARD_ROW.format(e="e", source="FROM entries e"),
    ):
        db.execute(statement)


# What the board reads of a run, report or coverage entry, kept in its board row (m005, leaner since m008) so that
# judging a cell parses a few hundred bytes per candidate instead of the entry's front matter: a JSON object in the
# front matter's shape holding only the members the board reads (kb/answers/board.py, figures.py), and a section
# only when it holds one of them (the reader leaves out what is null, as absent). Parsing these objects was most of
# what `kb board` spent per candidate, so each member left out is one Python object less per run.
def _facts(src: str) -> str:
    """The facts of the entry whose front matter is the SQL expression `src`.

    json_extract, not `->` (SQLite 3.38), and each nested object or array wrapped in json(): a value that
    passes through CASE or a subquery may lose its JSON mark on newer SQLite and be kept as a string."""

    def at(path: str) -> str:
        return f"json_extract({src}, '$.{path}')"

    def kept(section: str, *members: str) -> str:
        """The section with those of these members that hold a value, or NULL when none does."""
        present = " OR ".join(f"json_type({src}, '$.{section}.{m}') != 'null'" for m in members)
        pairs = ", ".join(f"'{m}', {at(f'{section}.{m}')}" for m in members)
        return f"json(CASE WHEN {present} THEN json_patch('{{}}', json_object({pairs})) END)"

    def metric(name: str) -> str:
        return (
            f"json(CASE json_type({src}, '$.metrics.{name}') WHEN 'object' THEN json_object('value', "
            f"{at(f'metrics.{name}.value')}, 'unit', {at(f'metrics.{name}.unit')}) ELSE {at(f'metrics.{name}')} END)"
        )

    step = (
        f"json(CASE json_type({src}, '$.timings.step_s') WHEN 'object' THEN json_object('median', "
        f"{at('timings.step_s.median')}) ELSE json_quote({at('timings.step_s')}) END)"
    )
    whole = ", ".join(f"'{name}', {at(name)}" for name in ("id", "title", "recorded", "tags", "settings", "versions"))
    return (
        f"json_object({whole}, "
        # The one-off timings are read for being there; of the steps only their median.
        f"'timings', json(CASE json_type({src}, '$.timings') WHEN 'object' THEN json_replace(json_remove("
        f"{at('timings')}, '$.started', '$.ended', '$.wall_s'), '$.step_s', {step}) END), "
        f"'metrics', json(NULLIF(json_patch('{{}}', json_object('tokens_per_s', {metric('tokens_per_s')}, "
        f"'samples_per_s', {metric('samples_per_s')})), '{{}}')), "
        f"'coverage', {kept('coverage', 'passed', 'skipped', 'total')}, "
        f"'provenance', {kept('provenance', 'publisher', 'date')}, "
        f"'precision', {kept('precision', 'dtype')}, "
        f"'adaptations', CASE json_type({src}, '$.adaptations') WHEN 'array' THEN json_array_length({src}, "
        "'$.adaptations') END, "
        # Of the accelerators only their count (how many devices the run used).
        f"'hardware', json(CASE json_type({src}, '$.hardware.accelerators') WHEN 'array' THEN json_object("
        f"'accelerators', json((SELECT json_group_array(json_object('count', json_extract(value, '$.count'))) "
        f"FROM json_each({src}, '$.hardware.accelerators') WHERE type = 'object'))) END), "
        f"'compile', {kept('compile', 'cache')}, "
        f"'numerics', {kept('numerics', 'verdict')}, "
        # json_extract gives 1 or 0 for true or false: the placement verdict is kept as JSON's true or false.
        f"'fallbacks', json(CASE json_type({src}, '$.fallbacks.stayed_on_device') WHEN 'true' THEN "
        "'{\"stayed_on_device\": true}' WHEN 'false' THEN '{\"stayed_on_device\": false}' END))"
    )


# Failed runs are counted and listed, never judged: they keep no facts.
def _row_with_facts(e: str, source: str = "") -> str:
    facts = f"CASE WHEN {_CATEGORY.format(e=e)} = 'other' THEN NULL ELSE {_facts(f'{e}.front_matter')} END"
    return _BOARD_ROW.format(e=e, source=f", {facts} {source}")


def m005_board_facts(db: Database) -> None:
    # The facts (and the triggers that keep them) came here first, in a fuller form; m008 makes them as they are
    # now, and runs in the same connect, so an index from before both makes them once.
    db.execute("ALTER TABLE board_rows ADD COLUMN facts TEXT")


def _keep_facts(db: Database) -> None:
    """The board rows' facts as `_facts` reads them, now and (by the triggers) as the entries change."""
    added = _row_with_facts("NEW")
    for statement in (
        "DROP TRIGGER board_entry_added",
        "DROP TRIGGER board_entry_changed",
        f"CREATE TRIGGER board_entry_added AFTER INSERT ON entries BEGIN {added}; END",
        "CREATE TRIGGER board_entry_changed AFTER UPDATE ON entries BEGIN "
        f"DELETE FROM board_rows WHERE entry_id = OLD.id; {added}; END",
        f"UPDATE board_rows SET facts = (SELECT {_facts('e.front_matter')} FROM entries e "
        "WHERE e.id = board_rows.entry_id) WHERE category != 'other'",
    ):
        db.execute(statement)


def m006_fulltext_joined_classes(db: Database) -> None:
    # A failure class is also indexed as one word (kb/index/fulltext.py, joined), as the next sync reads every entry.
    _read_every_entry_again(db)


def m007_files_digest(db: Database) -> None:
    # One digest of the whole manifest (each file's path, size and time, in scan order): a sync that looks at every
    # file tells an unchanged folder without reading the manifest back (kb/index/sync.py). At most one row. Any
    # change to the manifest empties it, whoever makes it (an older kb too); a full look stores it again last.
    db.execute("CREATE TABLE files_digest (digest TEXT NOT NULL)")
    for event in ("INSERT", "UPDATE", "DELETE"):
        db.execute(
            f"CREATE TRIGGER files_digest_{event.lower()} AFTER {event} ON files BEGIN DELETE FROM files_digest; END"
        )


def m008_leaner_board_facts(db: Database) -> None:
    # The facts keep only what the board reads (`_facts`): parsing them was most of `kb board`'s time per candidate.
    _keep_facts(db)


# The releases (kb release) the board's checklist and the decisions compare with, as one narrow row each, kept by
# triggers as the entries change: reading them out of 2,000 release entries' front matter cost every `kb board` tens
# of milliseconds at 100,000 entries.
_RELEASE_ROW = (
    "INSERT INTO release_rows SELECT {e}.id, {e}.recorded, json_extract({e}.front_matter, '$.release.package'), "
    "json_extract({e}.front_matter, '$.release.version'), json_extract({e}.front_matter, '$.release.date') "
    "{source} WHERE {e}.kind = 'release'"
)


def m009_release_rows(db: Database) -> None:
    added = _RELEASE_ROW.format(e="NEW", source="")
    for statement in (
        "CREATE TABLE release_rows (entry_id TEXT PRIMARY KEY, recorded TEXT NOT NULL, package TEXT, version TEXT, "
        "date TEXT)",
        "CREATE INDEX release_rows_order ON release_rows(recorded, entry_id)",
        f"CREATE TRIGGER release_entry_added AFTER INSERT ON entries BEGIN {added}; END",
        "CREATE TRIGGER release_entry_removed AFTER DELETE ON entries BEGIN "
        "DELETE FROM release_rows WHERE entry_id = OLD.id; END",
        "CREATE TRIGGER release_entry_changed AFTER UPDATE ON entries BEGIN "
        f"DELETE FROM release_rows WHERE entry_id = OLD.id; {added}; END",
        "DROP INDEX entries_releases",  # what found them before
        _RELEASE_ROW.format(e="e", source="FROM entries e"),
    ):
        db.execute(statement)


def m010_folder_looks(db: Database) -> None:
    # What the last full look found, per folder (kb/index/look.py): it tells an unchanged folder without listing it
    # or reading the manifest back, and a changed one's changed files. `folder_looks` (the folder's ctime, the
    # folders entered below it) stands for the manifest only while no one wrote it since: any change to the manifest
    # empties it, whoever makes it, and a full look stores it again last. `folder_files` (the names, and each file's
    # size and time) is kept beside it, apart, so that an edit changes 16 bytes of it in place rather than the whole
    # (7 MB for 90,000 files in one folder). Folders are bytes: a name need not be UTF-8. This kb no longer reads
    # m007's digest; its table stays, for a kb from before this one.
    for statement in (
        "CREATE TABLE folder_looks (folder BLOB PRIMARY KEY, ctime_ns INTEGER, below BLOB NOT NULL)",
        "CREATE TABLE folder_files (folder BLOB PRIMARY KEY, names BLOB NOT NULL, signatures BLOB NOT NULL)",
        *(
            f"CREATE TRIGGER folder_looks_{event.lower()} AFTER {event} ON files BEGIN DELETE FROM folder_looks; END"
            for event in ("INSERT", "UPDATE", "DELETE")
        ),
    ):
        db.execute(statement)


def m011_files_ctime_and_inode(db: Database) -> None:
    # A file's status-change time and inode beside its size and time (kb/index/signature.py): each file is hashed
    # once more by the next sync (its signature differs), and the looks, stored in the old width, are dropped.
    for statement in (
        "ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT -1",
        "ALTER TABLE files ADD COLUMN inode INTEGER NOT NULL DEFAULT -1",
        "DELETE FROM folder_files",
        "DELETE FROM folder_looks",
    ):
        db.execute(statement)


# The schema's history, oldest first: each function runs once, in order, in its own transaction.
MIGRATIONS = (
    m001_initial, m002_watch_position, m003_fulltext, m004_board, m005_board_facts, m006_fulltext_joined_classes,
    m007_files_digest, m008_leaner_board_facts, m009_release_rows, m010_folder_looks, m011_files_ctime_and_inode,
)  # fmt: skip


@cache
def _migrations() -> Any:
    from sqlite_utils.migrations import Migrations  # only when the schema changes: sqlite-utils is slow to import

    registry = Migrations(MIGRATION_SET)
    for step in MIGRATIONS:
        registry()(step)
    return registry


def index_path(cache: Path) -> Path:
    return cache / DB_NAME


def connect(path: Path) -> sqlite3.Connection:
    """Open (making or migrating as needed) the index; a damaged file is replaced by a fresh one. In a folder kb
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
            conn.execute("SELECT count(*) FROM entries").fetchone()
            return conn
        except sqlite3.DatabaseError as exc:  # damaged, too: it cannot be rebuilt here
            failure = exc
    raise storage_error(path, failure) from None


def finished(path: Path) -> bool:
    """Whether the index at `path` is one a build finished, and can be read as it is (when it cannot be brought up
    to date). A build that was killed leaves a file without its schema version, half written or empty."""
    from kb.schema import SCHEMA_VERSION

    try:
        conn = connect_read_only(path)
    except KbError:
        return False
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()


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


# A build from nothing writes every entry at once. The rows that triggers derive from each entry (the board's and the
# releases') and the indexes of the tables it only adds to cost less made once at its end, from the whole tables,
# than kept up row by row: at 20,000 entries, about a third of the build's writing.
_DERIVING_TRIGGERS = ("board_entry_added", "board_row_added", "release_entry_added")
_GROWING_TABLES = (
    "tags", "settings", "versions", "metrics", "timings", "failures", "links", "accelerators", "board_rows",
    "board_cells", "release_rows",
)  # fmt: skip


@contextlib.contextmanager
def loading_in_bulk(db: sqlite3.Connection) -> Iterator[None]:
    """Around the writing of every entry into an empty index, inside its transaction: those triggers and indexes are
    dropped, and afterwards the derived rows are made from the whole tables and the triggers and indexes made again
    as the schema held them. The index is then as writing the entries one by one leaves it. On an exception nothing
    is made again: the caller rolls the transaction back (the schema with it), or removes a build's file."""

    def marks(names: tuple[str, ...]) -> str:
        return ", ".join(f"'{name}'" for name in names)

    saved = db.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND "
        f"((type = 'trigger' AND name IN ({marks(_DERIVING_TRIGGERS)})) "
        f"OR (type = 'index' AND tbl_name IN ({marks(_GROWING_TABLES)})))"
    ).fetchall()
    missing = set(_DERIVING_TRIGGERS) - {name for kind, name, _ in saved if kind == "trigger"}
    if missing:  # renamed by a migration: left in place, it would make each of its rows a second time
        raise RuntimeError(f"the index has no trigger {', '.join(sorted(missing))} for a build to replace")
    for kind, name, _ in saved:
        db.execute(f"DROP {kind.upper()} {name}")
    yield
    cell = "workload, backend, mode, category, class"
    for statement in (
        _row_with_facts("e", "FROM entries e"),
        f"INSERT INTO board_cells SELECT {cell}, count(*) FROM board_rows GROUP BY {cell}",
        _RELEASE_ROW.format(e="e", source="FROM entries e"),
        *(sql for _, _, sql in saved),
    ):
        db.execute(statement)


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
    conn.execute("PRAGMA foreign_keys = ON")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable at checkpoints, never corrupt
    if _pending(conn):
        from sqlite_utils import Database

        _migrations().apply(Database(conn))
    return conn


def _pending(conn: sqlite3.Connection) -> bool:
    try:
        rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [MIGRATION_SET])
    except sqlite3.OperationalError:  # no migrations table: a new database
        return True
    return {row[0] for row in rows} != {step.__name__ for step in MIGRATIONS}
