"""How `kb site serve` notices changes under the entries folder: inotify, and the walk it falls back to."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb.website import changes

KINDS = [changes.InotifyChanges, changes.WalkedChanges]
WAIT_S = 0.3


@pytest.fixture(params=KINDS, ids=lambda kind: kind.__name__)
def watched(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, changes.Changes]]:
    entries = tmp_path / "entries"
    (entries / "2026").mkdir(parents=True)
    (entries / "2026" / "a.md").write_text("a\n")
    watcher = request.param(entries)
    yield entries, watcher
    watcher.close()


def test_nothing_changed_is_no_change(watched: tuple[Path, changes.Changes]) -> None:
    _, watcher = watched
    assert not watcher.changed(WAIT_S)


def test_an_edited_entry_is_a_change_once(watched: tuple[Path, changes.Changes]) -> None:
    entries, watcher = watched
    (entries / "2026" / "a.md").write_text("a, edited\n")
    assert watcher.changed(WAIT_S)
    assert not watcher.changed(WAIT_S)


def test_files_in_a_folder_made_after_the_start_are_seen(watched: tuple[Path, changes.Changes]) -> None:
    entries, watcher = watched
    (entries / "2027" / "b").mkdir(parents=True)
    watcher.changed(WAIT_S)  # empty folders: a change to inotify, no file changed for the walk
    (entries / "2027" / "b.md").write_text("b\n")
    assert watcher.changed(WAIT_S)
    (entries / "2027" / "b" / "trace.json").write_text("{}")  # an attachment, two folders down
    assert watcher.changed(WAIT_S)
    (entries / "2027" / "b" / "trace.json").write_text('{"edited": true}')
    assert watcher.changed(WAIT_S)


def test_deletions_and_renames_are_changes(watched: tuple[Path, changes.Changes]) -> None:
    entries, watcher = watched
    (entries / "2026" / "a.md").rename(entries / "2026" / "renamed.md")
    assert watcher.changed(WAIT_S)
    shutil.rmtree(entries / "2026")
    assert watcher.changed(WAIT_S)
    assert not watcher.changed(WAIT_S)


def test_a_linked_folder_is_watched_and_a_link_back_up_ends_the_walk(watched: tuple[Path, changes.Changes]) -> None:
    entries, watcher = watched
    elsewhere = entries.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "up").symlink_to(entries)  # a cycle: entries/linked/up/linked/...
    os.symlink(elsewhere, entries / "linked")
    watcher.changed(WAIT_S)  # no file yet: a change to inotify only
    (elsewhere / "c.md").write_text("c\n")
    assert watcher.changed(WAIT_S)
    assert not watcher.changed(WAIT_S)


def test_the_entries_folder_replaced_is_watched_again_after_a_link_back_up(
    watched: tuple[Path, changes.Changes],
) -> None:
    entries, watcher = watched
    (entries / "2026" / "up").symlink_to(entries)  # the entries folder watched a second time, under another path
    watcher.changed(WAIT_S)  # a link to a folder: a change to inotify only
    entries.rename(entries.with_name("old"))
    assert watcher.changed(WAIT_S)
    entries.mkdir()
    (entries / "new.md").write_text("new\n")
    watcher.changed(WAIT_S)  # the folder back: watched again (inotify) or a file more (the walk)
    (entries / "new.md").write_text("new, edited\n")
    assert watcher.changed(WAIT_S)


def test_without_inotify_instances_left_the_folder_is_walked(tmp_path: Path) -> None:
    from inotify_simple import INotify

    said: list[str] = []
    held: list[INotify] = []
    try:
        while len(held) < 100_000:  # the system's limit on instances (128 by default), or on open files
            try:
                held.append(INotify())
            except OSError:
                break
        watcher = changes.watch(tmp_path, said.append)
    finally:
        for instance in held:
            instance.close()
    assert isinstance(watcher, changes.WalkedChanges)
    assert said and said[0].startswith("cannot use inotify") and said[0].endswith("walked once a second")
    (tmp_path / "a.md").write_text("a\n")
    assert watcher.changed(WAIT_S)


def test_the_entries_folder_replaced_is_watched_again(watched: tuple[Path, changes.Changes]) -> None:
    entries, watcher = watched
    shutil.rmtree(entries)
    assert watcher.changed(WAIT_S)
    (entries / "2026").mkdir(parents=True)
    watcher.changed(WAIT_S)  # as above
    (entries / "2026" / "new.md").write_text("new\n")
    assert watcher.changed(WAIT_S)
    assert not watcher.changed(WAIT_S)
