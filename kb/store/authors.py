"""Who writes an entry: the person git would sign a commit of it with, else the login.

A team shares a knowledge base through git, so the name that signs its commits is the one its entries carry
(runs, decisions, reviews, releases): `user.name <user.email>` as the knowledge base's repository sees them.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 5.0


def current_author(folder: Path) -> str | None:
    """'Name <email>' (or either alone) from git's configuration seen from folder; else the login; else None."""
    return _git_identity(folder) or _login()


def _git_identity(folder: Path) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        ran = subprocess.run(
            [git, "config", "--get-regexp", r"^user\.(name|email)$"],
            cwd=folder if folder.is_dir() else None,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found: dict[str, str] = {}
    for line in ran.stdout.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(" ")
        if value.strip():
            found[key] = value.strip()  # the last one wins, as in git: the repository's over the global one
    name, email = found.get("user.name"), found.get("user.email")
    if name and email:
        return f"{name} <{email}>"
    return name or email


def _login() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment and no passwd entry (a bare container)
        return None
