"""Pages rendered by several processes on a large build: entry pages are most of the pages and most of the time.

Entry pages go to worker processes in chunks, each worker with its own connection to the index (an entry page
needs only its entry id and revisit state), while this process renders the other pages. Small builds (an edit,
a new entry) render in this process: starting a worker (imports, the index) costs about half a second.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from kb.store.knowledge_base import KnowledgeBase
from kb.website.pages import Page
from kb.website.render import Rendered, render_page

MIN_PAGES = 400  # entry pages to render before worker processes pay for their start
CHUNK = 100  # entry pages per task: few enough messages, small enough to share out evenly

_worker: tuple[KnowledgeBase, Path, str, Any] | None = None  # (kb, out, base_url, EntryPages) in a worker process


def render_pages(kb: KnowledgeBase, out: Path, base_url: str, pages: list[Page]) -> Iterator[Rendered]:
    """Render and write `pages`, yielding each as it is done (in no particular order)."""
    entries = [page for page in pages if page.entry]
    workers = min(os.cpu_count() or 1, len(entries) // MIN_PAGES)
    if workers < 2:
        for page in pages:
            yield render_page(kb, out, base_url, page)
        return
    jobs = [(page.path, page.key, *page.entry) for page in entries]
    # spawn, not fork: `kb site serve` builds in a thread of a process that serves in another.
    context = get_context("spawn")
    with ProcessPoolExecutor(workers, context, initializer=_start, initargs=(kb.root, out, base_url)) as pool:
        tasks = [pool.submit(_render, jobs[start : start + CHUNK]) for start in range(0, len(jobs), CHUNK)]
        for page in pages:
            if not page.entry:
                yield render_page(kb, out, base_url, page)
        for task in tasks:
            yield from task.result()


def _start(root: Path, out: Path, base_url: str) -> None:
    from kb.index.db import connect, index_path
    from kb.website.pages import EntryPages, Site

    global _worker
    kb = KnowledgeBase(root)
    _worker = (kb, out, base_url, EntryPages(Site(kb, connect(index_path(kb.cache_path)))))


def _render(jobs: list[tuple[str, str, str, Any]]) -> list[Rendered]:
    assert _worker is not None, "set by _start in each worker"
    kb, out, base_url, entry_pages = _worker
    return [
        render_page(kb, out, base_url, Page(path, "entry.html", key, partial(entry_pages.context, entry_id, state)))
        for path, key, entry_id, state in jobs
    ]
