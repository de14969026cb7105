"""What tells a sync, without reading it, that an entry file is as indexed: its size, its modification and
status-change times, and its inode, as git's index keeps them.

Size and modification time alone are not enough: `touch -r`, `cp -p` and `tar x` give a rewritten file its old
time back, and on a file system with coarse times an edit in the same second keeps it. Nothing can set a file's
status-change time (ctime) back, and a file put in another's place has another inode. Where the times are coarse
(whole seconds), a ctime as recent as the sync itself could still move within its tick after the file was read: such
a file is stored as unsettled, so the next sync reads and hashes it again (and parses it only if its text changed).
"""

from __future__ import annotations

import os

from kb.store.folders import SETTLED_NS

Signature = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
WIDTH = 4  # numbers per signature, as the looks store them one after the other
GONE: Signature = (-1, -1, -1, -1)  # a name gone since it was listed, a link leading nowhere, or a folder now
_SECOND_NS = 1_000_000_000


def of(found: os.stat_result) -> Signature:
    return found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino


def as_stored(signature: Signature, began_ns: int) -> Signature:
    """The signature to keep for a file read by a sync that began at `began_ns`: one that vouches for nothing
    (ctime -1, which no file has) when its times are coarse and its ctime within SETTLED_NS of the sync."""
    size, mtime_ns, ctime_ns, inode = signature
    coarse = ctime_ns % _SECOND_NS == 0 and mtime_ns % _SECOND_NS == 0
    return (size, mtime_ns, -1, inode) if coarse and ctime_ns >= began_ns - SETTLED_NS else signature
