"""The one step before any command reads the knowledge base: the index brought up to date with the entries
folder, and the entries of recorders that died (still `running`, their process gone) settled as `killed`, so
that every reader (kb ls, search, check, index, site build and serve) shows the same status."""

from __future__ import annotations

from kb.index.db import IndexUnwritable, connect, finished, index_path, reading
from kb.index.sync import Counting, SyncReport, Waiting, sync
from kb.store import orphans
from kb.store.knowledge_base import KnowledgeBase


def prepare(
    kb: KnowledgeBase,
    *,
    settle: orphans.Settle | None = None,
    rebuild: bool = False,
    stale_ok: bool = False,
    every_folder: bool = False,
    waiting: Waiting | None = None,
    progress: Counting | None = None,
) -> SyncReport:
    """Sync, settle dead recorders' entries with `settle` (the CLI passes ingest.killed.settle; without it they are
    left as they are), and sync again if any was settled; the first sync's report.

    `stale_ok`: on a full disk or a read-only cache folder, an index that exists is read as it was (the report's
    `stale` says why) instead of the error. `every_folder`, `waiting`, `progress`: see kb.index.sync.sync.
    """
    try:
        report = sync(kb, rebuild=rebuild, every_folder=every_folder, waiting=waiting, progress=progress)
    except IndexUnwritable as exc:
        path = index_path(kb.cache_path)
        if not stale_ok or not path.is_file() or not finished(path):
            raise
        return SyncReport(stale=str(exc).split("; the entries are safe")[0])
    if report.read_only:  # nothing can be written: dead recorders' entries stay as they are
        return report
    orphans.remove_unpublished(kb)
    if settle is not None and orphans.settle_running(kb, running_paths(kb), settle):
        sync(kb, waiting=waiting, progress=progress)
    return report


def running_paths(kb: KnowledgeBase) -> list[str]:
    """The paths (relative to the entries folder) of the entries the index knows as running."""
    db = connect(index_path(kb.ensure_cache()))
    try:
        with reading(db):
            return [row[0] for row in db.execute("SELECT path FROM entries WHERE status = 'running' ORDER BY path")]
    finally:
        db.close()
