"""A knowledge base on a read-only mount (a colleague's clone) answers every reading command from its index when
that index is current, and from the index as it was, with a warning, when an entry changed since."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

READERS = (
    ("ls",),
    ("ls", "--json"),
    ("search", "unroll"),
    ("check",),
    ("board",),
    ("board", "--regressions"),
    ("compare", "--workload", "llama", "--by", "backend"),
    ("trend", "tokens_per_s", "--workload", "llama"),
    ("show", "2026-01-02-llama-rocm-000002"),
    ("index",),
)


def _mounted_read_only(folder: Path) -> list[str] | None:
    """A command prefix that runs what follows with `folder` mounted read-only (a bind mount in a mount namespace of
    its own, which a user namespace lets anyone make), or None where the system allows none."""
    prefix = ["unshare", "-rm", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"']
    if not shutil.which("unshare"):
        return None
    probe = subprocess.run([*prefix, str(folder), "sh", "-c", ': > "$0/.probe"', str(folder)], capture_output=True)
    return [*prefix, str(folder)] if probe.returncode != 0 and not (folder / ".probe").exists() else None


def _run_read_only(kb: KnowledgeBase, prefix: list[str] | None, *args: str) -> subprocess.CompletedProcess:
    if prefix is not None:
        return subprocess.run([*prefix, sys.executable, "-m", "kb", *args], capture_output=True, text=True, timeout=120)
    return run_kb(*args)  # as a user the folder's modes forbid writing to (chmod -R a-w, below)


@pytest.fixture
def answers(kb: KnowledgeBase) -> dict[tuple[str, ...], subprocess.CompletedProcess]:
    """Each reader's answer while the knowledge base is writable, its index made and current."""
    _base(kb)
    assert run_kb("index").returncode == 0
    return {args: run_kb(*args) for args in READERS}


@pytest.fixture
def read_only(kb: KnowledgeBase, answers: dict) -> Iterator[list[str] | None]:
    """The commands' prefix to run on the knowledge base made read-only, after `answers`."""
    prefix = _mounted_read_only(kb.root)
    if prefix is None:
        if os.geteuid() == 0:
            pytest.skip("no mount namespace to be had here, and root writes whatever the modes say")
        subprocess.run(["chmod", "-R", "a-w", str(kb.root)], check=True)
        yield None
        subprocess.run(["chmod", "-R", "u+w", str(kb.root)], check=True)
        return
    yield prefix


def _base(kb: KnowledgeBase) -> None:
    for i, (backend, rate) in enumerate((("cuda", 1000.0), ("rocm", 800.0)), start=1):
        write_entry(
            kb,
            f"2026-01-0{i}-llama-{backend}-00000{i}",
            f"llama on {backend}",
            body="The loop would not unroll.",
            recorded=f"2026-01-0{i}T00:00:00Z",
            status="completed",
            backend=backend,
            mode="eager",
            workload={"name": "llama"},
            versions={"torch": "2.13.0"},
            metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}},
        )


def test_a_read_only_knowledge_base_answers_every_reading_command(
    kb: KnowledgeBase, answers: dict, read_only: list[str] | None
) -> None:
    for args in READERS:
        result = _run_read_only(kb, read_only, *args)
        assert result.returncode == answers[args].returncode, (args, result.stderr)
        assert result.stdout.split(" in ")[0] == answers[args].stdout.split(" in ")[0], args  # (kb index's time)
        assert "Read-only" not in result.stderr and "warning" not in result.stderr, (args, result.stderr)
    assert {row["id"] for row in json_data(_run_read_only(kb, read_only, "ls", "--json").stdout)} == {
        "2026-01-01-llama-cuda-000001",
        "2026-01-02-llama-rocm-000002",
    }


def test_a_read_only_knowledge_base_changed_since_its_index_answers_from_it_and_says_so(
    kb: KnowledgeBase, answers: dict
) -> None:
    (kb.entries_path / "2026-01-02-llama-rocm-000002.md").unlink()  # pulled since the index was made
    prefix = _mounted_read_only(kb.root)
    if prefix is None:
        pytest.skip("no mount namespace to be had here")
    result = _run_read_only(kb, prefix, "ls")
    assert result.returncode == 0, result.stderr
    assert "may be stale" in result.stderr and "Traceback" not in result.stderr
    rebuilt = _run_read_only(kb, prefix, "index", "--rebuild")
    assert rebuilt.returncode == 1 and "make" in rebuilt.stderr and "writable" in rebuilt.stderr, rebuilt.stderr


def test_a_read_only_clone_without_its_index_folder_answers_from_an_index_built_elsewhere(
    kb: KnowledgeBase, answers: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.rmtree(kb.cache_path)  # a fresh clone: `.kb/` is never committed
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    prefix = _mounted_read_only(kb.root)
    if prefix is None:
        if os.geteuid() == 0:
            pytest.skip("no mount namespace to be had here, and root writes whatever the modes say")
        subprocess.run(["chmod", "-R", "a-w", str(kb.root)], check=True)
    try:
        for args in READERS:
            result = _run_read_only(kb, prefix, "--kb", str(kb.root), *args)
            assert result.returncode == answers[args].returncode, (args, result.stderr)
            if args != ("index",):  # it builds the index anew here: its counts differ
                assert result.stdout == answers[args].stdout, args
            assert "Read-only" not in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
            if args[0] not in ("show", "index"):  # the commands that read the index say where it is
                assert f"kb: {kb.root} has no .kb folder and cannot be written: indexed in {temporary}" in (
                    result.stderr
                ), (args, result.stderr)
    finally:
        if prefix is None:
            subprocess.run(["chmod", "-R", "u+w", str(kb.root)], check=True)
    assert not (kb.root / ".kb").exists()
    (borrowed,) = (temporary / next(temporary.iterdir()).name).iterdir()
    assert (borrowed / "index.db").is_file() and oct(borrowed.parent.stat().st_mode & 0o777) == "0o700"
