"""Storage faults: a full disk, a read-only entries folder, the cache deleted, cache files truncated or overwritten.

Every time: kb says what is wrong in one line that names the file (never a traceback), no entry is lost or
half-written, and the next command works without a manual step (the cache is rebuilt from the entries).
KB_FAULT_ROUNDS (default 1) multiplies the rounds of the damage and deletion tests.
"""

from __future__ import annotations

import os
import random
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.index.db import index_path
from kb.store.knowledge_base import KnowledgeBase

ROUNDS = int(os.environ.get("KB_FAULT_ROUNDS", "1"))
MARK = "wombat"
ONE_ERROR = re.compile(r"kb: error: [^\n]+\n")


def _entries(kb: KnowledgeBase, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        body = f"Notes about run {n}: {MARK} {'padding ' * 40}\n"
        recorded = f"2026-01-01T00:00:{n % 60:02d}Z"
        write_entry(kb, f"2026-01-01-entry-{n:06d}", f"{MARK} {n}", recorded=recorded, status="completed", body=body)


def _snapshot(kb: KnowledgeBase) -> dict[str, bytes]:
    return {str(path.relative_to(kb.root)): path.read_bytes() for path in kb.entries_path.rglob("*") if path.is_file()}


def _with_file_limit(limit: int) -> Callable[[], None]:
    """A child whose files cannot grow past `limit` bytes: a full disk, as the writes see it (EFBIG)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _kb_limited(limit: int, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kb", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, preexec_fn=_with_file_limit(limit))  # fmt: skip


def _assert_clean_error(result: subprocess.CompletedProcess, mentions: str) -> None:
    assert result.returncode == 1, result.stderr
    assert ONE_ERROR.fullmatch(result.stderr), result.stderr
    assert mentions in result.stderr


def _assert_all_found(kb: KnowledgeBase, env: dict[str, str] | None = None) -> None:
    """The next commands need no help: search and ls find every entry file there is."""
    expected = sorted(path.stem for path in kb.iter_entry_paths())
    found = run_kb("search", MARK, "--json", "--limit", "100000", env=env)
    assert (found.returncode, found.stderr) == (0, "")
    assert sorted(row["id"] for row in json_data(found.stdout)) == expected
    listed = run_kb("ls", "--json", "--limit", "0", env=env)
    assert (listed.returncode, listed.stderr) == (0, "")
    assert sorted(row["id"] for row in json_data(listed.stdout)) == expected


@pytest.mark.parametrize("limit", [0, 20_000])
def test_a_full_disk_while_indexing_is_one_line_and_the_next_command_catches_up(kb: KnowledgeBase, limit: int) -> None:
    _entries(kb, 10)
    assert run_kb("index").returncode == 0
    _entries(kb, 60, start=10)  # pending: the next sync must write them all
    before = _snapshot(kb)
    result = _kb_limited(limit, "index")
    _assert_clean_error(result, f"{kb.cache_path}/")
    assert "free some disk space, then run the command again" in result.stderr
    assert _snapshot(kb) == before
    _assert_all_found(kb)


def test_a_full_disk_before_the_index_exists_is_one_line(kb: KnowledgeBase) -> None:
    _entries(kb, 3)
    result = _kb_limited(0, "search", MARK)
    _assert_clean_error(result, f"cannot update {index_path(kb.cache_path)}: ")
    _assert_all_found(kb)


@pytest.mark.parametrize("limit", [100, 700])
def test_a_full_disk_while_recording_leaves_whole_entries(kb: KnowledgeBase, limit: int) -> None:
    result = _kb_limited(limit, "record", "--", "echo", MARK)
    assert result.returncode == 1
    error = result.stderr.splitlines()[-1]
    assert re.fullmatch(rf"kb: error: cannot write {kb.entries_path}/\S+\.md: File too large; free some disk space",
                        error), result.stderr  # fmt: skip
    problems: list = []
    entries = list(kb.iter_entries(problems))
    assert problems == []  # what is there parses: written whole or not at all
    assert not [p for p in kb.entries_path.rglob(".*") if p.name.endswith(".tmp")]  # no temporary file left
    listed = run_kb("ls", "--json", "--limit", "0")
    assert listed.returncode == 0
    assert sorted(row["id"] for row in json_data(listed.stdout)) == sorted(e.id for e in entries)


def test_a_read_only_entries_folder_refuses_a_recording_and_still_answers(kb: KnowledgeBase) -> None:
    _entries(kb, 3)
    before = _snapshot(kb)
    with _read_only(kb.entries_path) as prefix:
        result = subprocess.run([*prefix, sys.executable, "-m", "kb", "record", "--", "echo", MARK],
                                capture_output=True, text=True, timeout=300)  # fmt: skip
        error = result.stderr.splitlines()[-1]
        assert result.returncode == 1
        assert re.fullmatch(rf"kb: error: cannot write {kb.entries_path}/\S+\.md: "
                            r"(Permission denied|Read-only file system); check the entries folder is writable",
                            error), result.stderr  # fmt: skip
        searched = subprocess.run([*prefix, sys.executable, "-m", "kb", "search", MARK, "--json"],
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
        assert (searched.returncode, searched.stderr) == (0, "")
        assert len(json_data(searched.stdout)) == 3
    assert _snapshot(kb) == before


class _read_only:
    """The folder read-only for the processes run with the returned command prefix.

    Not root: chmod. Root ignores modes, so a read-only bind mount in a mount namespace of the child's own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __enter__(self) -> list[str]:
        if os.geteuid() != 0:
            self.folder.chmod(0o555)
            return []
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
        prefix = ["unshare", "--mount", "sh", "-c", script, "sh", str(self.folder)]
        if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode:
            pytest.skip("running as root without a way to mount a read-only folder")
        return prefix

    def __exit__(self, *exc: object) -> None:
        self.folder.chmod(0o755)


def test_the_cache_folder_deleted_between_commands_is_rebuilt(kb: KnowledgeBase) -> None:
    _entries(kb, 5)
    assert run_kb("index").returncode == 0
    shutil.rmtree(kb.cache_path)
    _assert_all_found(kb)


def test_the_cache_folder_deleted_while_indexing(kb: KnowledgeBase) -> None:
    """Deleted at points spread over a rebuild: the indexer ends cleanly, or says so in one line; the next
    command finds everything."""
    _entries(kb, 100)
    started = time.monotonic()
    assert run_kb("index", "--rebuild").returncode == 0
    took = time.monotonic() - started
    rng = random.Random(7)
    outcomes = []
    for _ in range(2 * ROUNDS):
        indexer = subprocess.Popen([sys.executable, "-m", "kb", "index", "--rebuild"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(rng.uniform(0.3, 1.0) * took)
        shutil.rmtree(kb.cache_path, ignore_errors=True)
        _, stderr = indexer.communicate(timeout=300)
        assert (indexer.returncode == 0 and stderr == "") or ONE_ERROR.fullmatch(stderr), stderr
        outcomes.append(indexer.returncode)
        _assert_all_found(kb)
    print(f"\ncache deleted during {len(outcomes)} rebuilds: {outcomes.count(0)} finished, the rest one-line errors")


@pytest.mark.parametrize(
    ("target", "first_kind"),
    [("index.db", 0), ("index.db", 1), ("index.db", 2)],
)
def test_damaged_cache_files_are_reported_or_rebuilt(
    kb: KnowledgeBase, tmp_path: Path, target: str, first_kind: int
) -> None:
    """Truncated, overwritten with garbage or with zeros, at a seeded place, with a new entry waiting."""
    _entries(kb, 40)
    assert run_kb("index").returncode == 0
    rng = random.Random(target)
    kinds = ["truncate", "garbage", "zeros"]  # first_kind: each is tried on some file in the one-round default
    for round_ in range(ROUNDS):
        how = kinds[(first_kind + round_) % len(kinds)]
        copy = KnowledgeBase(tmp_path / f"round-{round_}")
        shutil.copytree(kb.root, copy.root)
        env = {"KB_HOME": str(copy.root)}
        victim = sorted(copy.cache_path.glob(target))[0]
        _damage(victim, how, rng)
        _entries(copy, 1, start=1000 + round_)
        before = _snapshot(copy)
        first = run_kb("search", MARK, "--json", "--limit", "100000", env=env)
        assert "Traceback" not in first.stderr
        if first.returncode:
            _assert_clean_error(first, str(copy.cache_path))
        _assert_all_found(copy, env)
        assert _snapshot(copy) == before


def _damage(path: Path, how: str, rng: random.Random) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        if how == "truncate":
            handle.truncate(rng.randrange(size))
            return
        handle.seek(rng.randrange(size))
        length = rng.randrange(1, 4096)
        handle.write(rng.randbytes(length) if how == "garbage" else bytes(length))


@pytest.mark.parametrize(
    ("command", "table"),
    [(("check",), "links"), (("compare", "--workload", "w", "--by", "backend"), "entries"),
     (("trend", "tokens_per_s", "--workload", "w"), "metrics"), (("revisit",), "entries"), (("site", "build"), "tags")],
    ids=lambda value: value[0] if isinstance(value, tuple) else value,
)  # fmt: skip
def test_a_damaged_index_found_by_any_command_is_one_line_and_rebuilt(
    kb: KnowledgeBase, command: tuple, table: str
) -> None:
    """Garbage over the first page of a table the command reads and a sync with nothing to do does not: the
    command fails in one line naming the file, and the command after it finds everything."""
    for n in range(40):
        write_entry(
            kb, f"2026-01-01-w-{n:06d}", f"{MARK} {n}", recorded=f"2026-01-01T00:00:{n % 60:02d}Z", status="completed",
            workload={"name": "w"}, backend=("cpu", "cuda")[n % 2], versions={"torch": f"2.{n % 3 + 7}.0"},
            metrics={"tokens_per_s": {"value": 100.0 + n, "unit": "tok/s", "better": "higher"}},
            links={"reference": "2026-01-01-w-000000"}, tags=["t"],
        )  # fmt: skip
    assert run_kb(*command).returncode == 0  # the command works on a sound index
    index = index_path(kb.cache_path)
    db = sqlite3.connect(index)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(index, "r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(random.Random(table).randbytes(page_size))
    result = run_kb(*command)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1 and ONE_ERROR.fullmatch(result.stderr), result.stderr
    assert f"{index}: database disk image is malformed; removed it" in result.stderr
    _assert_all_found(kb)
