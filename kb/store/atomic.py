"""Atomic file writes: a reader, a crash or a kill never sees a half-written file."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

_TEMPORARY = re.compile(r"\..+\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp")


def _temporary(path: Path) -> Path:
    # Same folder as the target, so the final rename never crosses a file system; a leading dot keeps
    # scans of the entries folder from mistaking it for an entry. The pid says whose it is (temporaries()).
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def writer_of(temporary: Path) -> int | None:
    """The pid of the process that made a temporary file (from its name), or None for any other file."""
    match = _TEMPORARY.fullmatch(temporary.name)
    return int(match["pid"]) if match else None


def temporaries(folder: Path, pid: int | None = None) -> list[Path]:
    """The temporary files in `folder` (only writer `pid`'s, if given). A writer killed between writing one
    and renaming it leaves it behind; a live writer's are in use, so only remove those of a dead one.
    A folder that cannot be listed raises OSError."""
    # The cheap test first: at 100,000 entries, sorting and matching every name took 0.2 s per command.
    names = sorted(name for name in os.listdir(folder) if name.startswith(".") and name.endswith(".tmp"))
    writers = [(folder / name, writer_of(folder / name)) for name in names]
    return [path for path, writer in writers if writer is not None and pid in (None, writer)]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open folders; the rename is still atomic there
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(
    path: Path, mode: str = "xb", *, exclusive: bool = False, durable: bool = True, **open_args: Any
) -> Iterator[IO[Any]]:
    """A new temporary file beside `path`, opened with `mode` ("xb", or "x" with open()'s text arguments), for the
    block to write. Once the block ends the file is closed (fsynced first when `durable`) and renamed over `path`
    (hard-linked when `exclusive`, which fails if `path` exists); if anything fails it is removed."""
    tmp = _temporary(path)
    try:
        with open(tmp, mode, **open_args) as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, path)  # atomic and fails with FileExistsError: no two writers can take one id
            tmp.unlink()
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(path.parent)


def write_bytes(path: Path, data: bytes, *, exclusive: bool = False, durable: bool = True) -> None:
    """Write via a temporary file, fsync (when `durable`), then rename (or hard-link when `exclusive`, which fails
    if `path` exists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path, exclusive=exclusive, durable=durable) as handle:
        handle.write(data)


def write_text(path: Path, text: str, *, exclusive: bool = False, durable: bool = True) -> None:
    write_bytes(path, text.encode("utf-8"), exclusive=exclusive, durable=durable)
