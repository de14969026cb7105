"""The files that make a knowledge base's folder a git repository a team shares without conflicts.

Entries are the truth and each has a file of its own with a name that never collides, so git merges them
as it merges any new files. What kb derives from them (the site, the index and caches) is rebuilt in every
clone and would only conflict and churn in commits: it is ignored.
"""

from __future__ import annotations

from pathlib import Path

from kb.store import atomic

GITIGNORE = ".gitignore"
HEADER = "# Derived by kb from entries/, rebuilt in every clone: never committed (kb site build, kb index)"
IGNORED = ("/site/", "/.kb/")


def write_gitignore(root: Path) -> list[str]:
    """Add the derived folders to root's .gitignore, keeping what it holds; returns the lines added."""
    path = root / GITIGNORE
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in IGNORED if line not in present]
    if missing:
        lead = text if not text or text.endswith("\n") else text + "\n"
        atomic.write_text(path, lead + "\n".join([HEADER, *missing]) + "\n")
    return missing
