"""An entry file rewritten with its old size and modification time is indexed again: `touch -r`, `cp -p`, `tar x`
and coarse file-system times keep both, but not the file's status-change time or its inode."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import json_data, run_kb, write_entry

from kb.index import signature
from kb.index.sync import sync
from kb.store.knowledge_base import KnowledgeBase


def _rewritten_alike(path: Path, text: str, staging: Path) -> Path:
    """`text` (as long as the file's) in a file beside it with the file's modification time."""
    assert len(text.encode()) == path.stat().st_size
    staging.mkdir(exist_ok=True)
    new = staging / path.name
    new.write_text(text)
    before = path.stat()
    os.utime(new, ns=(before.st_atime_ns, before.st_mtime_ns))
    return new


def touch_r(path: Path, text: str, staging: Path) -> None:
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # touch -r: the old time given back


def cp_p(path: Path, text: str, staging: Path) -> None:
    shutil.copy2(_rewritten_alike(path, text, staging), path)  # cp -p: into the same file, the copy's time kept


def tar_x(path: Path, text: str, staging: Path) -> None:
    new = _rewritten_alike(path, text, staging)
    archive = staging / "entries.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(new, arcname=path.name)
    if shutil.which("tar"):  # the real tar replaces the file: a new inode
        subprocess.run(["tar", "xf", str(archive), "-C", str(path.parent)], check=True)
    else:
        with tarfile.open(archive) as tar:
            tar.extractall(path.parent, filter="data")


@pytest.mark.parametrize("rewrite", [touch_r, cp_p, tar_x], ids=["touch-r", "cp-p", "tar-x"])
def test_a_file_rewritten_with_its_old_size_and_time_is_indexed_again(
    kb: KnowledgeBase, tmp_path: Path, rewrite: Callable[[Path, str, Path], None]
) -> None:
    path = write_entry(kb, "2026-01-01-alike-000001", "alpha run", recorded="2026-01-01T00:00:00Z", status="completed")
    broken = write_entry(kb, "2026-01-02-broken-000002", recorded="2026-01-02T00:00:00Z", status="completed")
    for written in (path, broken):  # whole seconds, as a tar archive keeps them
        os.utime(written, (1_767_225_600, 1_767_225_600))
    assert sync(kb).added == 2
    rewrite(path, path.read_text().replace("alpha run", "omega run"), tmp_path / "staging")
    # A file that no longer parses: the same size, its front matter's fence gone.
    rewrite(broken, broken.read_text().replace("---", "+++", 1), tmp_path / "staging2")
    report = sync(kb)
    assert (report.updated, report.removed) == (1, 1)
    shown = json_data(run_kb("ls", "--json").stdout)
    assert [(row["id"], row["title"]) for row in shown] == [("2026-01-01-alike-000001", "omega run")]
    assert [row["id"] for row in json_data(run_kb("search", "omega", "--json").stdout)] == ["2026-01-01-alike-000001"]
    checked = run_kb("check")
    assert checked.returncode == 1 and broken.name in checked.stdout + checked.stderr


def test_a_file_only_touched_is_hashed_not_parsed_and_an_unchanged_one_not_even_read(kb: KnowledgeBase) -> None:
    path = write_entry(kb, "2026-01-01-touched-000001", recorded="2026-01-01T00:00:00Z", status="completed")
    sync(kb)
    assert sync(kb).unchanged == 1
    before = path.stat()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same times: only its ctime moves
    report = sync(kb)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 1)


def test_coarse_times_as_recent_as_the_sync_vouch_for_nothing() -> None:
    began = 1_700_000_000_000_000_000  # a sync's start, in ns
    coarse_now = (120, began, began, 7)  # whole seconds, in the sync's own second
    assert signature.as_stored(coarse_now, began) == (120, began, -1, 7)  # read and hashed again next time
    coarse_old = (120, began - 10**10, began - 10**10, 7)
    assert signature.as_stored(coarse_old, began) == coarse_old
    fine_now = (120, began + 123, began + 456, 7)  # a clock of nanoseconds tells an edit in the same second
    assert signature.as_stored(fine_now, began) == fine_now
