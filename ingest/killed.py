"""An entry left `running` by a `kb record` that was killed, closed as `killed` (kb.store.orphans finds them)."""

from __future__ import annotations

from datetime import datetime, timezone

from kb.errors import KbError
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase
from kb.store.orphans import remove_leftovers


def settle(kb: KnowledgeBase, entry: Entry) -> Entry:
    """Close an orphaned entry as killed; if the file cannot be written, the entry is still shown as killed."""
    from ingest.finish import Outcome, finish  # every query command looks for orphans; few ever settle one

    recorder = entry.data["recorder"]
    message = (
        f"kb record (pid {recorder['pid']} on {recorder['host']}) stopped before finishing this entry, "
        "most likely killed; the command's own outcome is unknown"
    )
    try:
        finish(kb, entry, Outcome("killed", _last_sign_of_life(kb, entry), observed={"message": message}))
    except KbError:
        entry.data["status"] = "killed"
    remove_leftovers(kb, entry)
    return entry


def _last_sign_of_life(kb: KnowledgeBase, entry: Entry) -> datetime:
    """When the run last wrote output (or the entry was last written): the best estimate of its end."""
    from ingest.finish import OUTPUT_LOG

    candidates = [path for path in (kb.attachments_path(entry) / OUTPUT_LOG, entry.path) if path and path.exists()]
    latest = max(path.stat().st_mtime for path in candidates)
    return datetime.fromtimestamp(latest, timezone.utc)
