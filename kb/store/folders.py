"""Walking a folder tree as kb does: names in order, linked folders followed, each folder once."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from operator import attrgetter
from stat import S_ISDIR

_NAME = attrgetter("name")
# A folder's modification time vouches for its listing only when this much older than the listing: a name made in
# the same tick of the clock leaves the time as it was.
SETTLED_NS = 2_000_000_000


def is_dir(item: os.DirEntry) -> bool:
    """Whether the item is a folder, or a link to one. A link that leads nowhere (its target gone, a loop of links,
    a path through a file) is neither a folder nor a file: os.DirEntry says so only for a target gone."""
    try:
        return item.is_dir()
    except OSError:
        return False


def is_file(item: os.DirEntry) -> bool:
    """Whether the item is a file, or a link to one (see is_dir)."""
    try:
        return item.is_file()
    except OSError:
        return False


def is_no_folder(item: os.DirEntry) -> bool:
    """Whether the item is there and no folder: a file, a FIFO, a device, or a link to one (a link that leads
    nowhere is not there; see is_dir)."""
    if not item.is_symlink():
        return not item.is_dir()  # from the listing itself: no lookup
    try:
        return not S_ISDIR(item.stat().st_mode)
    except OSError:
        return False


def each_folder_once(top: str, prefix: str = "") -> Iterator[tuple[str, str, os.stat_result, list[str]]]:
    """(prefix, path, stat, below) of `top` and of the folders below it that the caller enters, depth first.

    The caller puts the names of the folders to enter into `below` before asking for the next. Linked folders are
    followed, each folder once: a link may point back up. A folder below `top` gone since its parent was listed is
    skipped; `top` gone is skipped too, and `top` under a file is an error.
    """
    seen: set[tuple[int, int]] = set()
    stack = [(prefix, top)]
    while stack:
        relative, folder = stack.pop()
        try:
            stat = os.stat(folder)
        except (FileNotFoundError, NotADirectoryError) as exc:
            _skipped(exc, folder, top)
            continue
        if (stat.st_dev, stat.st_ino) in seen:
            continue
        seen.add((stat.st_dev, stat.st_ino))
        below: list[str] = []
        yield relative, folder, stat, below
        stack.extend((f"{relative}{name}/", os.path.join(folder, name)) for name in reversed(below))


def walk(
    top: str,
    prefix: str = "",
    *,
    enter: Callable[[os.DirEntry, set[str]], bool] | None = None,
    on_folder: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[str, list[os.DirEntry]]]:
    """(prefix, listing in name order) of `top` and of each folder below it, depth first.

    `prefix` is `top`'s path relative to the tree's root ("" or "2026/"); a folder below gets its own added.
    `enter(item, files)` says whether to go into a folder (`files`: the names of the files beside it).
    Linked folders are followed, each folder once: a link may point back up. `on_folder(prefix, path)` is
    called before a folder is listed, so that a watch added there misses nothing made in it afterwards.
    A folder below `top` that is gone, or a file now, since its parent was listed is skipped, as is a
    folder for which `on_folder` raises either error.
    """
    for relative, folder, _, below in each_folder_once(top, prefix):
        try:
            if on_folder:
                on_folder(relative, folder)
            with os.scandir(folder) as listing:
                items = list(listing)
        except (FileNotFoundError, NotADirectoryError) as exc:
            _skipped(exc, folder, top)
            continue
        items.sort(key=_NAME)
        yield relative, items
        entered = [item for item in items if is_dir(item)]
        if entered and enter is not None:  # (the names of the files are only needed then: 90,000 in one folder)
            files = {item.name for item in items if is_file(item)}
            entered = [item for item in entered if enter(item, files)]
        below.extend(item.name for item in entered)


def _skipped(exc: OSError, folder: str, top: str) -> None:
    """A folder gone, or a file now, since its parent was listed is skipped; `top` under or as a file is an error."""
    if isinstance(exc, NotADirectoryError) and folder == top:
        raise exc
