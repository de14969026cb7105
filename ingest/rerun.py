"""`kb rerun ID`: the same command, settings and working folder, on today's software, linked to the original."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ingest import environment
from ingest.describe import RunInfo
from ingest.recorder import Recorded, record_command
from kb.errors import KbError
from kb.model.entry import Entry
from kb.secrets.redact import MASK
from kb.store.authors import current_author
from kb.store.knowledge_base import KnowledgeBase


@dataclass
class Rerun:
    original: Entry
    recorded: Recorded
    warnings: list[str] = field(default_factory=list)


def check(kb: KnowledgeBase, ref: str) -> tuple[Entry, list[str], Path, list[str]]:
    """The original entry, its command, working folder and the warnings, or a KbError saying why not."""
    original = kb.load(ref)
    command = original.data.get("command") or {}
    argv, cwd = command.get("argv"), command.get("cwd")
    if original.kind != "run" or not argv or not cwd:
        raise KbError(
            f"{original.id} holds no recorded command to run again (it was recorded after the fact, or is not a run)"
        )
    if any(MASK in arg for arg in argv):
        raise KbError(
            f"{original.id}: its command line had secrets masked ({MASK}); run it again by hand under kb record"
        )
    folder = Path(cwd)
    if not folder.is_dir():
        raise KbError(f"{original.id} ran in {cwd}, which is not on this machine; run it again by hand")
    warnings = []
    shown = command.get("line")
    if isinstance(shown, str) and shown != shlex.join(argv):
        warnings.append(f"the line {original.id} shows is not the command that runs: {shown}")
    recorded_git = original.data.get("git") or {}
    then = recorded_git.get("commit")
    # The commit is the code's repository's (ingest.provenance), not always the working folder's.
    code = Path(recorded_git["repository"]) if isinstance(recorded_git.get("repository"), str) else folder
    now = environment.git_state(code).get("commit") if code.is_dir() else None
    if then and now and then != now:
        warnings.append(f"the code changed: {original.id} ran at commit {then[:12]}, {code} is now at {now[:12]}")
    return original, argv, folder, warnings


def rerun(kb: KnowledgeBase, ref: str, stdout: BinaryIO | None = None) -> Rerun:
    """Run the original's command again and record it; its output goes to `stdout` (kb's own by default)."""
    original, argv, folder, warnings = check(kb, ref)
    data = original.data
    info = RunInfo(
        title=original.title,
        workload=original.get("workload.name"),
        backend=data.get("backend"),
        mode=data.get("mode"),
        tags=list(data.get("tags") or []),
        settings=dict(data.get("settings") or {}),
        rerun_of=original.id,
        signed_by=current_author(kb.root),
    )
    # Nobody stated these today: what the run says now (its settings, the threads it had) replaces them.
    return Rerun(original, record_command(kb, list(argv), info, cwd=folder, stdout=stdout, given=[]), warnings)
