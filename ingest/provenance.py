"""Whose git commit a recorded run ran: the repository of the script, never the knowledge base's own.

A run is usually recorded from the knowledge base's folder (`kb record -- python ~/code/train.py`), whose own
repository says nothing about the code and is always dirty (the new entry is untracked). So the code's
repository is looked for where the command's files are (the script, a shell file, an executable given by its
path), then in the command's working folder; a repository holding the knowledge base is skipped. `--code-dir`
names it outright. When none is found, the entry says so instead of naming a wrong commit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingest.environment import GIT_TIMEOUT_S, git_state

# python, python3, python3.11, python3.13t: an interpreter, not the code
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*t?)?")

# A command names few files; looking further would only cost git calls.
MOST_CANDIDATES = 4


def command_files(argv: Sequence[str], cwd: Path) -> list[Path]:
    """The existing files the command names, in order: the script of `python train.py`, `./run.sh`, a config.

    The program itself counts only when it is a script of its own (`./train.sh`): an interpreter or a tool
    (`python`, `/opt/venv/bin/torchrun`) lives in some installation's folder, not in the code's repository."""
    found: list[Path] = []
    for position, arg in enumerate(argv):
        if arg.startswith("-"):
            continue
        path = Path(cwd, arg).resolve()  # an absolute arg stays itself
        try:
            if not path.is_file() or path in found or (position == 0 and not _own_script(path)):
                continue
        except OSError:  # a name too long or unreadable is only not a candidate
            continue
        found.append(path)
        if len(found) == MOST_CANDIDATES:
            break
    return found


def _own_script(program: Path) -> bool:
    if _PYTHON_NAME.fullmatch(program.name) or program.parent.name == "bin":
        return False
    with program.open("rb") as handle:
        return handle.read(2) == b"#!"


def repository_root(folder: Path) -> Path | None:
    """The top folder of the git work tree holding folder; None outside one, without git, or on any git error."""
    git = shutil.which("git")
    if git is None or not folder.is_dir():
        return None
    try:
        ran = subprocess.run(
            [git, "rev-parse", "--show-toplevel"],
            cwd=folder,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    top = ran.stdout.decode("utf-8", "replace").strip()
    return Path(top).resolve() if ran.returncode == 0 and top else None


def code_repository(argv: Sequence[str], cwd: Path, kb_root: Path) -> tuple[Path | None, str]:
    """The repository of the code a command runs and where it was found from; (None, why not) when none is."""
    kb_repository = repository_root(kb_root)
    looked: list[Path] = []
    for place, described in [*((f.parent, f"the command's file {f.name}") for f in command_files(argv, cwd)),
                             (cwd, "the working folder")]:  # fmt: skip
        if place in looked:
            continue
        looked.append(place)
        root = repository_root(place)
        if root is not None and root != kb_repository:
            return root, described
    return None, (
        "no git repository holds the command's files or its working folder, other than the knowledge base's "
        "own; pass --code-dir to name the code's repository"
    )


def code_git(argv: Sequence[str], cwd: Path, kb_root: Path, code_dir: Path | None = None) -> dict[str, Any]:
    """git_state of the code's repository, with the folder it is in and where it was found from.

    With no repository: commit, branch, dirty and diff are None and "none" says why."""
    if code_dir is not None:
        root = repository_root(code_dir)
        how = "--code-dir" if root else f"--code-dir {code_dir} is not in a git repository"
    else:
        root, how = code_repository(argv, cwd, kb_root)
    if root is None:
        return {"commit": None, "branch": None, "dirty": None, "diff": None, "none": how}
    return {**git_state(root), "repository": str(root), "found_from": how}
