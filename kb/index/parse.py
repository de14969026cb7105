"""Entry files read, hashed and parsed for a sync: in this process, or for a large sync in worker processes.

Parsing (YAML, typing, validation) and making the index rows is about half of a build and needs nothing but the
file, so a sync of many files hands it to one worker per CPU while it writes what comes back to the index. The
results come back in the order of the files (the first file holding an id keeps it), and only a few chunks are out
at a time, so memory stays bounded however large the knowledge base.
"""

from __future__ import annotations

import gc
import hashlib
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from kb.errors import EntryError, Problem
from kb.index import signature
from kb.index.rows import Rows, rows_of
from kb.index.signature import GONE, Signature
from kb.model.entry import Entry
from kb.store.reading import Refused, leads_nowhere, read_entry_file

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

# From this many files on, worker processes parse them (starting them costs about what 50 entries take).
PARALLEL_FILES = 1000
CHUNK = 64  # files per task handed to a worker
# Chunks handed out and not yet taken back, at least 2 per worker: about two of the sync's write batches, so that the
# workers keep parsing while it writes one (with 2 per worker on 2 CPUs, they waited, and a build ran on 1.4 of them).
IN_FLIGHT = 16
ORPHAN_POLL_S = 0.2  # how often a worker looks whether its sync is still there


@dataclass
class Read:
    """What became of one file: gone, refused (problems, no digest), unchanged (its digest was the one given),
    or parsed (its entry's rows, or the problems that stopped it)."""

    gone: bool = False
    signature: Signature = GONE
    digest: str = ""
    rows: Rows | None = None
    problems: list[Problem] = field(default_factory=list)


# A file to read: its path, the knowledge base's root (links may point inside it), and the digest it had.
Job = tuple[Path, Path, str | None]


def read(job: Job) -> Read:
    path, root, indexed = job
    try:
        raw, stat = read_entry_file(path, root)
    except OSError as exc:  # gone, or a link leading nowhere now: it goes the way of a file that was never seen
        if not leads_nowhere(exc):
            raise
        return Read(gone=True)
    except Refused as exc:  # a FIFO, a device, a link out of the knowledge base, a huge file
        stat = exc.status or path.lstat()  # the file opened, else the link
        return Read(signature=signature.of(stat), problems=exc.problems)
    done = Read(signature=signature.of(stat), digest=hashlib.sha256(raw).hexdigest())
    if done.digest != indexed:  # touched, not changed: not parsed again
        try:
            done.rows = rows_of(Entry.from_bytes(raw, path))
        except EntryError as exc:
            done.problems = exc.problems
    return done


def read_all(jobs: list[Job]) -> Iterator[Read]:
    """Each job's Read, in order. The workers are forked here, before the caller iterates and perhaps starts a
    thread of its own (a progress bar's)."""
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    # Workers are forked: never from a process running other threads (a recorder inside a training script), as a
    # lock one of them held would stay held in the worker.
    if len(jobs) < PARALLEL_FILES or workers < 2 or threading.active_count() > 1:
        return map(read, jobs)
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    pool = ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=_start, initargs=(os.getpid(),))
    chunks = (jobs[start : start + CHUNK] for start in range(0, len(jobs), CHUNK))
    ahead = islice(chunks, max(IN_FLIGHT, 2 * workers))
    pending = deque(pool.submit(_read_chunk, chunk) for chunk in ahead)  # forks them all
    return _in_order(pool, pending, chunks)


def _start(parent: int) -> None:
    """A worker's start. Ctrl-C is the main process's to handle: a worker that took it would print a traceback of its
    own. A worker whose sync is killed ends too: forked, it holds the pipes it would learn of that from, so it waited
    for work for good, and with its copy of the lock file's descriptor it held the index's lock, so that every later
    command waited for it. What it was forked with (the modules) lives as long as it does: frozen, the collector
    no longer walks it, which was about a twentieth of a worker's time."""
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with, args=(parent,), daemon=True).start()


def _end_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    os._exit(1)


def _in_order(pool: Executor, pending: deque[Future[list[Read]]], chunks: Iterator[list[Job]]) -> Iterator[Read]:
    try:
        while pending:
            done = pending.popleft().result()
            for chunk in islice(chunks, 1):
                pending.append(pool.submit(_read_chunk, chunk))
            yield from done
    finally:
        pool.shutdown(cancel_futures=True)


def _read_chunk(jobs: list[Job]) -> list[Read]:
    return [read(job) for job in jobs]
