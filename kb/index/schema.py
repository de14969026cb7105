"""The index's schema: every table, index and view in one place, and the format it makes with the rows written.

The index is a projection of the entries, rebuilt, never migrated: its format is a digest of this DDL, of the row
builder's version (kb.index.rows.ROWS_VERSION), of the entry schema's version and of the dictionary its names give
the packed front matter, stored in the database when a build ends. An index of any other format (another kb's, or
one a build did not finish) is thrown away and built again from the entries by the next sync. Changing a table or
what a row holds is then an edit here or in kb/index/rows.py, and no more. Documented for people in docs/search.md.
"""

from __future__ import annotations

import hashlib

from kb.index import fulltext, stored_json
from kb.index.rows import CHILD_TABLES, ROWS_VERSION
from kb.model.validation import SCHEMA_VERSION

# The normalised tables' rows name their entry by its number (`entries.n`, its rowid: a few bytes where its id takes
# 56 characters, in the table and in each index on it). They go with their entry (ON DELETE CASCADE; a sync writing
# with the foreign keys off deletes them itself, kb.index.sync._delete).
_TABLES = """
CREATE TABLE entries (
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
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
    environment TEXT,
    attachments TEXT,
    front_matter BLOB NOT NULL
);
CREATE INDEX entries_recorded ON entries(recorded);
CREATE INDEX entries_workload_backend ON entries(workload, backend, mode, recorded);
CREATE INDEX entries_status ON entries(status);
CREATE INDEX entries_failure ON entries(failure_class);
-- The manifest: what was indexed of each entry file (kb/index/signature.py).
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    entry_id TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
CREATE INDEX files_entry ON files(entry_id);
CREATE TABLE problems (path TEXT NOT NULL, line INTEGER, field TEXT, message TEXT NOT NULL);
CREATE INDEX problems_path ON problems(path);
CREATE TABLE tags (entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE, tag TEXT NOT NULL);
CREATE INDEX tags_tag ON tags(tag, entry);
-- An entry's settings, metrics and timings are a mapping (one row per name): kept in the order of (entry, name),
-- without a rowid, so that the table is its own index by entry. Metrics and timings have no index by name: no query
-- looks them up by name alone (the list of their names reads the whole table, as quick as a whole index of them).
CREATE TABLE settings (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    name TEXT NOT NULL, value TEXT, number REAL,
    PRIMARY KEY (entry, name)
) WITHOUT ROWID;
CREATE INDEX settings_name ON settings(name, number);
CREATE TABLE versions (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    package TEXT NOT NULL, version TEXT NOT NULL
);
CREATE INDEX versions_package ON versions(package, version, entry);
CREATE TABLE metrics (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    name TEXT NOT NULL, value REAL, unit TEXT, phase TEXT, better TEXT,
    PRIMARY KEY (entry, name)
) WITHOUT ROWID;
CREATE TABLE timings (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    name TEXT NOT NULL, seconds REAL,
    PRIMARY KEY (entry, name)
) WITHOUT ROWID;
CREATE TABLE failures (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    class TEXT, message TEXT, explanation TEXT, phase TEXT, assigned TEXT
);
CREATE INDEX failures_class ON failures(class);
CREATE TABLE links (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    role TEXT NOT NULL, target TEXT NOT NULL
);
CREATE INDEX links_target ON links(target);
CREATE TABLE accelerators (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    vendor TEXT, name TEXT, count INTEGER, memory_gb REAL
);
CREATE INDEX tags_entry ON tags(entry);
CREATE INDEX versions_entry ON versions(entry);
CREATE INDEX failures_entry ON failures(entry);
CREATE INDEX links_entry ON links(entry);
CREATE INDEX accelerators_entry ON accelerators(entry);
-- What the board reads of each run, report and coverage entry of a workload (kb/index/rows.py board_row): one narrow
-- row each, so that `kb board` reads one row per candidate. Its category: completed or other (measured runs), report
-- or coverage; class: of a measured run that did not complete, its failure class, else its status; facts: what the
-- board reads, as JSON in the front matter's shape (none for a run that did not complete).
CREATE TABLE board_rows (
    entry INTEGER PRIMARY KEY REFERENCES entries(n) ON DELETE CASCADE,
    entry_id TEXT NOT NULL,
    recorded TEXT NOT NULL, workload TEXT NOT NULL, backend TEXT, mode TEXT,
    kind TEXT NOT NULL, status TEXT, category TEXT NOT NULL, class TEXT, facts TEXT
);
CREATE INDEX board_rows_newest ON board_rows(workload, backend, mode, category, recorded, entry_id);
CREATE INDEX board_rows_failures ON board_rows(workload, backend, mode, class, recorded, entry_id)
    WHERE class IS NOT NULL;
-- The versions of its backend's packages (kb/index/rows.py BACKEND_PACKAGES) each measured run records, beside its
-- cell: the releases of a cell and the runs on one of them, read without reading the cell's other runs.
CREATE TABLE board_versions (
    entry INTEGER NOT NULL REFERENCES entries(n) ON DELETE CASCADE,
    entry_id TEXT NOT NULL,
    workload TEXT NOT NULL, backend TEXT, mode TEXT, recorded TEXT NOT NULL, package TEXT NOT NULL,
    version TEXT NOT NULL
);
CREATE INDEX board_versions_cell ON board_versions(workload, backend, mode, package, version, recorded, entry_id);
CREATE INDEX board_versions_entry ON board_versions(entry, package);
-- How many board rows each (workload, backend, mode, category, failure class) holds, made again from them for each
-- cell a sync changed (kb.index.sync): the board reads one row per cell instead of every entry.
CREATE TABLE board_cells (
    workload TEXT NOT NULL, backend TEXT, mode TEXT, category TEXT NOT NULL, class TEXT, n INTEGER NOT NULL
);
CREATE INDEX board_cells_key ON board_cells(workload, backend, mode, category, class);
-- The releases (kb release) the board's checklist and the decisions compare with, one narrow row each.
CREATE TABLE release_rows (
    entry_id TEXT PRIMARY KEY REFERENCES entries(id) ON DELETE CASCADE,
    recorded TEXT NOT NULL, package TEXT, version TEXT, date TEXT
);
CREATE INDEX release_rows_order ON release_rows(recorded, entry_id);
-- The bootstrap intervals the verdicts computed (kb/answers/intervals.py), by a digest of what they resampled: the
-- board judges the same runs on every call, and resampling them again needs scipy, slower to import than the board.
CREATE TABLE intervals (key TEXT PRIMARY KEY, low REAL NOT NULL, high REAL NOT NULL) WITHOUT ROWID;
-- How far into `kb watch`'s journal the manifest is up to date (kb/index/watch.py): at most one row.
CREATE TABLE watch_position (token TEXT NOT NULL, offset INTEGER NOT NULL);
-- What the last full look found, per folder (kb/index/look.py); folders are bytes: a name need not be UTF-8.
CREATE TABLE folder_looks (folder BLOB PRIMARY KEY, ctime_ns INTEGER, below BLOB NOT NULL);
CREATE TABLE folder_files (folder BLOB PRIMARY KEY, names BLOB NOT NULL, signatures BLOB NOT NULL);
-- The format of the index (FORMAT below), written last by the build that made it: at most one row.
CREATE TABLE index_format (format TEXT NOT NULL);
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
    FROM entries e JOIN failures f ON f.entry = e.n
    WHERE e.status IN ('failed', 'killed', 'interrupted');
-- One row per run and metric, for charts and pivots.
CREATE VIEW run_metrics AS
    SELECT e.id, e.recorded, e.workload, e.backend, e.mode, m.name AS metric, m.value, m.unit, m.better
    FROM entries e JOIN metrics m ON m.entry = e.n
"""

# Tables that only grow while a build writes: their indexes are made once at its end (kb.index.db.loading_in_bulk).
GROWING_TABLES = (*CHILD_TABLES, "board_rows", "release_rows", "board_versions")


# Bytes per page of a new index: 8 KiB pages hold several entries' rows with little left empty; larger pages made
# the index smaller still but the board's reads slower (bench/NOTES.md and docs/performance.md give the figures).
PAGE_SIZE = 8192


def statements() -> list[str]:
    """Every statement that makes an empty index, in order."""
    return [statement.strip() for statement in _TABLES.split(";\n")] + fulltext.schema_sql()


# The dictionary the front matter is packed with too (kb.index.stored_json.packed: the entry schema's names).
FORMAT = hashlib.sha256(
    "\n".join([*statements(), f"pages {PAGE_SIZE}", f"rows {ROWS_VERSION}", f"entries {SCHEMA_VERSION}"]).encode()
    + stored_json.dictionary()
).hexdigest()[:16]
