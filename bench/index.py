"""Index and search at scale: build, one-entry pick-up, search and ls, against grep and bare FTS5.

On a generated knowledge base (bench.generate, seeded) of each size:
- full build of the index (`kb index --rebuild`, in process);
- the time until one edited entry is reflected (one sync after the edit, in process);
- `kb search` and `kb ls` as whole processes, and the search inside the process (warm);
- baselines on the same files: `grep -rli` over the entries folder (what a user without kb does), the bare FTS5
  query on kb's own table (the same MATCH expression, ranked, no filters, rows or snippets: the floor), a
  separate FTS5 table of the raw files, `python -c pass` (the floor of any process), and, when the peers' venv is
  installed (`make bench-peers` makes it), MLflow's bulk SQL insert of the same runs (bench.peers_jobs).
Targets at 100,000 entries: a build under 120 s and at most 2x MLflow's insert, the index at most 2x the size of
the entry files it indexes, one edit reflected in under 1 s (0.1 s with kb watch), a warm query under 20 ms and at
most 2x the bare FTS5 query, `kb search` as a process under 1 s (0.3 s with kb watch, and at least 4x faster than
grep); at 1,000 entries `kb search` within 5x of `python -c pass`.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.timing import machine, user_env

QUERIES = ("compile timeout", "out of memory", '"flex attention"', "backend:neuron failure:compile_timeout")
GREP_WORDS = ("timeout", "memory", "attention", "compile_timeout")


def run(sizes: tuple[int, ...], repeats: int) -> dict[str, float]:
    from bench.generate import default_cache, generate

    figures: dict[str, float] = {}
    print(f"\nindex and search; {machine()}")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kb-bench-index-") as folder:
            root = Path(folder) / "kb"
            began = time.perf_counter()
            kb = generate(root, size, seed=1, cache=default_cache())
            generated = time.perf_counter() - began
            figures |= _measure(kb, size, repeats, generated, with_mlflow=True)
    return figures


def run_on(root: Path, repeats: int) -> dict[str, float]:
    """The same figures on a knowledge base made already (e.g. by `python -m bench.generate`), indexed in place:
    pass a copy when others use it too. At 100,000 entries generating takes longer than the build."""
    from kb.store.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(root)
    print(f"\nindex and search; {machine()}")
    return _measure(kb, sum(1 for _ in kb.scan()), repeats, 0.0, with_mlflow=True)


def _median_process(command: list[str], env: dict[str, str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _measure(kb, size: int, repeats: int, generated: float, *, with_mlflow: bool = False) -> dict[str, float]:
    """Every figure at one size. `with_mlflow`: MLflow's bulk insert too (bench.peers loads MLflow itself, and takes
    this process's peak memory for the build's)."""
    from kb.index.db import connect, index_path
    from kb.index.query import Filters, search
    from kb.index.sync import sync

    env = user_env(KB_HOME=str(kb.root))
    began, cpu = time.perf_counter(), time.process_time()
    report = sync(kb, rebuild=True)
    build, build_cpu = time.perf_counter() - began, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the build is most of this process's peak
    index_mb = index_path(kb.cache_path).stat().st_size / 1e6
    entries_mb = sum(path.stat().st_size for path in kb.iter_entry_paths()) / 1e6

    mlflow = _mlflow_bulk(kb) if with_mlflow else None
    pick = _pick(kb, repeats)

    db = connect(index_path(kb.cache_path))
    search(db, QUERIES[0], Filters())  # warm: the parser is made once per process
    in_process = []
    for query in QUERIES * repeats:
        began = time.perf_counter()
        search(db, query, Filters(), limit=20)
        in_process.append(time.perf_counter() - began)
    bare = _bare_fts5(db, repeats)
    python = _median_process([sys.executable, "-c", "pass"], env, repeats)
    search_process = _search_process(env, repeats)
    ls_process = _ls_process(env, repeats)
    grep = statistics.median(
        _median_process(["grep", "-rli", word, str(kb.entries_path)], env, repeats) for word in GREP_WORDS
    )
    fts = _fts5(kb, repeats)
    with _watching(env):
        watched_pick = _pick(kb, repeats)
        watched_search = _search_process(env, repeats)
        watched_ls = _ls_process(env, repeats)

    query_ms = statistics.median(in_process) * 1000
    made = f"generated in {generated:.1f} s" if generated else "made beforehand"
    print(f"\n{size:,} entries ({made}; {report.added:,} indexed)")
    print(
        f"  full build (SQLite + FTS5)        {build:9.2f} s   {size / build:8.0f} entries/s (target < 120 s at "
        f"100,000); {build_cpu:.1f} s of CPU; peak memory {peak_mb:.0f} MB (target < 1,024)"
    )
    print(
        f"  index size                        {index_mb:9.0f} MB  for {entries_mb:,.0f} MB of entry files: "
        f"{index_mb / entries_mb:.2f}x (target <= 2x)"
    )
    if mlflow:
        print(
            f"  MLflow bulk SQL insert, same runs {mlflow['bulk_s']:9.2f} s   {mlflow['runs']:,} runs; kb's build is "
            f"{build / mlflow['bulk_s']:.2f}x it (target <= 2x)"
        )
    elif with_mlflow:
        print("  MLflow bulk SQL insert            not measured: the peers' venv is not installed (make bench-peers)")
    print(
        f"  one edited entry reflected        {pick:9.3f} s   (target < 1 s); "
        f"with kb watch {watched_pick:.3f} s (target < 0.1 s)"
    )
    print(
        f"  query in process (warm, median)   {query_ms:9.2f} ms  (target < 20 ms); "
        f"bare FTS5 {bare:.2f} ms: ratio {query_ms / bare:.1f}x (target <= 2x)"
    )
    print(
        f"  kb search, whole process          {search_process:9.3f} s   (target < 1 s); "
        f"grep -rli {grep:.3f} s: kb is {grep / search_process:.1f}x faster"
    )
    print(
        f"  kb search, with kb watch          {watched_search:9.3f} s   (target < 0.3 s); "
        f"kb is {grep / watched_search:.1f}x faster than grep (target >= 4x)"
    )
    print(f"  python -c pass                    {python:9.3f} s   kb search is {search_process / python:.1f}x it")
    print(f"  kb ls with 3 filters, process     {ls_process:9.3f} s   with kb watch {watched_ls:.3f} s")
    print(f"  FTS5 table of the raw files       {fts['build_s']:9.2f} s to build, {fts['query_ms']:.2f} ms a query")
    key = f"{size // 1000}k"
    return {
        f"build_s_{key}": build,
        f"build_cpu_s_{key}": build_cpu,
        f"build_peak_mb_{key}": peak_mb,
        f"index_mb_{key}": index_mb,
        f"entries_mb_{key}": entries_mb,
        f"pick_s_{key}": pick,
        f"query_ms_{key}": query_ms,
        f"search_process_s_{key}": search_process,
        f"grep_s_{key}": grep,
        f"fts_ms_{key}": fts["query_ms"],
        f"watched_pick_s_{key}": watched_pick,
        f"watched_search_process_s_{key}": watched_search,
        f"ls_process_s_{key}": ls_process,
        f"watched_ls_process_s_{key}": watched_ls,
        f"bare_fts_ms_{key}": bare,
        f"python_s_{key}": python,
        **({f"mlflow_bulk_s_{key}": mlflow["bulk_s"]} if mlflow else {}),
    }


def _mlflow_bulk(kb) -> dict[str, float] | None:
    """MLflow's bulk SQL insert of the knowledge base's runs into a store MLflow made ({"runs", "bulk_s"}), the
    baseline for the build; None without the peers' venv, which takes minutes to install."""
    from bench import peers_venv
    from bench.mlflow_runs import mlflow_runs

    if not peers_venv.installed():
        return None
    with tempfile.TemporaryDirectory(prefix="kb-bench-mlflow-") as folder:
        runs = Path(folder) / "runs.json"
        runs.write_text(json.dumps(mlflow_runs(kb)))
        try:
            db = peers_venv.new_store(peers_venv.python(), Path(folder) / "mlflow.db")
            load = peers_venv.job(peers_venv.python(), "mlflow-load", db, runs, 0, cwd=Path(folder), timeout=1800)
        except RuntimeError as exc:  # the peer failed: kb's figures still count
            print(f"  MLflow bulk SQL insert            failed: {str(exc).splitlines()[0]}")
            return None
        return load.json()


def _pick(kb, repeats: int) -> float:
    """Median seconds from an edit of one entry file to the sync that reflects it."""
    from kb.index.sync import sync

    victim = next(kb.iter_entry_paths())
    text = victim.read_text()
    picks = []
    for round_ in range(repeats):
        victim.write_text(text.replace("\n---\n", f"\n---\nedited {round_} zyzzyva\n", 1))
        began = time.perf_counter()
        report = sync(kb)
        picks.append(time.perf_counter() - began)
        assert report.updated == 1, report.summary()
    victim.write_text(text)
    sync(kb)
    return statistics.median(picks)


def _search_process(env: dict[str, str], repeats: int) -> float:
    command = [sys.executable, "-m", "kb", "search"]
    return statistics.median(_median_process([*command, query, "--json"], env, repeats) for query in QUERIES)


def _ls_process(env: dict[str, str], repeats: int) -> float:
    filters = ["--backend", "neuron", "--status", "failed", "--package", "torch>=2.9"]
    return _median_process([sys.executable, "-m", "kb", "ls", *filters, "--json"], env, repeats)


@contextlib.contextmanager
def _watching(env: dict[str, str]) -> Iterator[None]:
    """`kb watch` running (past its first sync) for the duration."""
    watcher = subprocess.Popen([sys.executable, "-m", "kb", "watch"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = watcher.stderr.readline()
        if "watching" not in line:
            raise RuntimeError(f"kb watch did not start: {line}")
        yield
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.communicate(timeout=60)


def _bare_fts5(db: sqlite3.Connection, repeats: int) -> float:
    """Median milliseconds of the same MATCH expressions on kb's table, ranked, ids only: the floor for a query."""
    from kb.index.fulltext import TABLE, compile_query

    matches = [compiled.match for query in QUERIES if (compiled := compile_query(query, db)) and compiled.match]
    sql = f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY rank LIMIT 20"
    times = []
    for match in matches * repeats:
        began = time.perf_counter()
        db.execute(sql, [match]).fetchall()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def _fts5(kb, repeats: int) -> dict[str, float]:
    """The floor: every entry file's text in one FTS5 table, queried for the same words."""
    with tempfile.TemporaryDirectory() as folder:
        db = sqlite3.connect(os.path.join(folder, "fts.db"))
        began = time.perf_counter()
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, body, tokenize='porter')")
        db.executemany(
            "INSERT INTO docs VALUES (?, ?)",
            ((str(p), p.read_text("utf-8", errors="replace")) for p in kb.iter_entry_paths()),
        )
        db.commit()
        build = time.perf_counter() - began
        times = []
        for query in ('"compile" "timeout"', '"out of memory"', '"flex attention"', "neuron compile_timeout") * repeats:
            began = time.perf_counter()
            db.execute("SELECT path FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 20", [query]).fetchall()
            times.append(time.perf_counter() - began)
        db.close()
    return {"build_s": build, "query_ms": statistics.median(times) * 1000}
