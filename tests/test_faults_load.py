"""Load: 32 `kb record` processes at once, with `kb index`, `kb search` and `kb ls` running all the while.

Every process is real and every one is judged: its exit code and all it wrote to stderr. Afterwards every
recorded run is an entry, every entry is in both indexes, and no process ever saw an error. The load lasts
KB_FAULT_SECONDS (default 10); e.g. KB_FAULT_SECONDS=120 runs the long version of the same test.
"""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from conftest import json_data, run_kb

from kb.index import fulltext
from kb.index.db import index_path
from kb.store.knowledge_base import KnowledgeBase

RECORDERS = 32
INDEXERS = 2
SEARCHERS = 2
SECONDS = float(os.environ.get("KB_FAULT_SECONDS", "10"))
MARK = "quokka"  # a word every recorded command prints, so a search finds every run
RECORDED = re.compile(r"kb: recorded (\S+) \(completed\)\n  (\S+)\n")


@dataclass
class Finished:
    role: str
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def _kb(role: str, *args: str) -> Finished:
    done = run_kb(*args, timeout=600)
    return Finished(role, list(done.args), done.returncode, done.stdout, done.stderr)


def _lane(role: str, lane: int, deadline: float) -> list[Finished]:
    """One worker: the same kind of command again and again until the deadline (each one finishes)."""
    finished: list[Finished] = []
    while not finished or time.monotonic() < deadline:
        n = len(finished)
        if role == "record":
            token = f"{MARK} lane{lane}run{n}"
            args = ["record", "--title", f"load {lane}-{n}", "--setting", f"lane={lane}", "--setting", f"n={n}",
                    "--", sys.executable, "-c", f"print({token!r})"]  # fmt: skip
        elif role == "index":
            args = ["index"]
        elif role == "search":
            args = ["search", MARK, "--json", "--limit", "100000"]
        else:
            args = ["ls", "--json", "--limit", "0"]
        finished.append(_kb(role, *args))
    return finished


WAITED = re.compile(r"kb: waiting for another kb process that is updating the index \([^\n]*\)\n")


def _unexpected(result: Finished) -> str | None:
    """What is wrong with one finished process, or None: any exit code but 0, any stderr beyond what is normal."""
    normal = {"record": RECORDED, "index": re.compile(r"\Z"), "search": re.compile(r"\Z"), "ls": re.compile(r"\Z")}
    stderr = WAITED.sub("", result.stderr)  # a note, not an error: on a loaded machine a sync can take seconds
    if result.returncode != 0 or not normal[result.role].fullmatch(stderr):
        return f"{' '.join(result.argv[3:])} exited {result.returncode}: {result.stderr!r}"
    return None


def test_thirty_two_recorders_with_indexers_and_searchers_lose_nothing(kb: KnowledgeBase) -> None:
    deadline = time.monotonic() + SECONDS
    lanes = [("record", i) for i in range(RECORDERS)] + [("index", i) for i in range(INDEXERS)]
    lanes += [("search", i) for i in range(SEARCHERS)] + [("ls", 0)]
    with ThreadPoolExecutor(len(lanes)) as pool:
        futures = [pool.submit(_lane, role, lane, deadline) for role, lane in lanes]
        results = [result for future in futures for result in future.result()]
    counts = Counter(result.role for result in results)
    errors = [problem for problem in map(_unexpected, results) if problem]
    waits = sum(bool(WAITED.search(result.stderr)) for result in results)
    print(f"\nload for {SECONDS:.0f} s: {dict(counts)} processes, {waits} waited over 10 s for the index lock, "
          f"{len(errors)} errors: {errors}")  # fmt: skip
    assert not [e for e in errors if e.startswith("record")]

    runs = {RECORDED.fullmatch(r.stderr)[1]: r for r in results if r.role == "record"}
    assert len(runs) == counts["record"]  # no two runs were given one id
    _every_run_is_a_complete_entry(kb, runs)
    for result in results:  # what was found mid-load was real: no half-written or phantom entry
        if result.role in ("search", "ls") and result.returncode == 0:
            assert {row["id"] for row in json_data(result.stdout)} <= runs.keys(), result.stdout

    final = _kb("index", "index")
    assert _unexpected(final) is None, final.stderr
    _both_indexes_hold_exactly(kb, runs.keys())
    found = json_data(_kb("search", "search", MARK, "--json", "--limit", "100000").stdout)
    assert sorted(row["id"] for row in found) == sorted(runs)
    listed = json_data(_kb("ls", "ls", "--json", "--limit", "0").stdout)
    assert sorted(row["id"] for row in listed) == sorted(runs)
    print(f"runs {len(runs)}, entries {len(list(kb.iter_entry_paths()))}, indexed {len(found)}")
    assert errors == []  # last, so that a long run reports what was lost (nothing) before any error


def _every_run_is_a_complete_entry(kb: KnowledgeBase, runs: dict[str, Finished]) -> None:
    problems: list = []
    entries = {entry.id: entry for entry in kb.iter_entries(problems)}
    assert problems == []
    assert entries.keys() == runs.keys()
    for entry_id, entry in entries.items():
        settings = entry.data["settings"]
        assert entry.status == "completed"
        assert f"\n{MARK} lane{settings['lane']}run{settings['n']}\n" in entry.body  # its own output, whole
        assert Path.cwd() / RECORDED.fullmatch(runs[entry_id].stderr)[2] == entry.path  # from the working folder


def _both_indexes_hold_exactly(kb: KnowledgeBase, ids: set[str] | frozenset[str]) -> None:
    db = sqlite3.connect(index_path(kb.cache_path))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert {row[0] for row in db.execute("SELECT id FROM entries")} == set(ids)
        assert db.execute("SELECT COUNT(*) FROM problems").fetchone()[0] == 0
        assert fulltext.indexed_ids(db) == set(ids)
        assert fulltext.count(db) == len(ids)  # no entry indexed twice
    finally:
        db.close()
