"""kb's cache on this machine, beside every knowledge base's own: `$XDG_CACHE_HOME/kb`, else `~/.cache/kb`.

What is kept there is derived and safe to delete: made again when missing."""

from __future__ import annotations

import os
from pathlib import Path


def folder(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kb" / name
