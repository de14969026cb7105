"""`kb record -- <command>`: run a command and write one truthful entry about it, however it ends.

The entry exists with status `running` before the command starts, so even a SIGKILL of kb leaves
evidence (settled later as `killed` by ingest.killed). The command's output passes through live and is
kept, redacted, as an attachment; the environment is captured while the command runs.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

from ingest import environment, provenance
from ingest.describe import RunInfo, command_title, identity_title
from ingest.finish import GIT_DIFF, OUTPUT_LOG, RUN_FOLDER, Outcome, finish
from ingest.handover import ENV_RUN_DIR
from ingest.runfolder import GIVEN, given_fields
from ingest.signals import SignalForwarder
from ingest.tee import Tee
from kb.model.entry import Entry, iso, new_entry, utc_now
from kb.model.ids import new_id
from kb.secrets.redact import redact_args, redact_text
from kb.store import atomic
from kb.store.knowledge_base import KnowledgeBase

ENV_ENTRY_ID = "KB_ENTRY_ID"
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
CLOCK_SLACK_S = 2.0  # the wall clock may drift from the monotonic one by this much in a run without a step


@dataclass
class Recorded:
    entry: Entry
    exit_code: int  # what `kb record` exits with: the command's own code, or 128+N for signal N
    started: bool = True  # False: the command could not be started (not found, not executable)


def record_command(
    kb: KnowledgeBase,
    argv: list[str],
    info: RunInfo,
    cwd: Path | None = None,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    given: list[str] | None = None,
    code_dir: Path | None = None,
) -> Recorded:
    """Run argv and record it. `given`: the fields a person stated as options, which what the run hands over never
    replaces (by default, those `info` holds)."""
    cwd = (cwd or Path.cwd()).resolve()
    record = kb.config.record
    captured: dict[str, Any] = {}
    capture = threading.Thread(
        target=lambda: captured.update(
            environment.capture(
                cwd,
                argv,
                packages=(*environment.DEFAULT_PACKAGES, *record.packages),
                env_prefixes=(*environment.DEFAULT_ENV_PREFIXES, *record.env_prefixes),
                probe_timeout_s=record.probe_timeout_s,
                git_of=lambda: provenance.code_git(argv, cwd, kb.root, code_dir),
            )
        ),
        name="kb-capture",
        daemon=True,
    )
    with SignalForwarder() as forwarder:
        forwarder.start_shielded(capture)  # the capture runs while the entry is written and the command runs
        entry = kb.create(_running_entry(argv, info, cwd, utc_now(), given_fields(info) if given is None else given))
        folder = kb.attachments_path(entry)
        run_folder = folder / RUN_FOLDER
        run_folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, ENV_RUN_DIR: str(run_folder), ENV_ENTRY_ID: entry.id}
        env.setdefault("PYTHONUNBUFFERED", "1")  # live output through the pipe, as in a terminal
        tee = Tee(folder / OUTPUT_LOG)
        started = utc_now()
        entry.data["timings"]["started"] = iso(started)
        clock = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            tee.close()
            capture.join(timeout=record.probe_timeout_s + 5)
            _apply_capture(kb, entry, captured)
            return _not_started(kb, entry, argv, exc)
        forwarder.attach(proc)
        tee.follow(proc.stdout, stdout or sys.stdout.buffer)
        tee.follow(proc.stderr, stderr or sys.stderr.buffer)
        returncode = proc.wait()
        wall_s = time.monotonic() - clock  # the command's own time, from a clock that never jumps
        ended, stepped = steady_end(started, utc_now(), wall_s)
        if stepped:
            entry.data["provenance"].setdefault("capture_problems", []).append(stepped)
        tee.close()  # reads what the command left in its pipes, then stops: a background child may hold them
        _note_output(entry, tee)
        # Still shielded: a Ctrl-C or SIGTERM now, with the outcome known, must not leave the entry running.
        capture.join(timeout=record.probe_timeout_s + 5)
        _apply_capture(kb, entry, captured)
        outcome = _outcome(returncode, forwarder.interrupted, ended)
        outcome.wall_s = wall_s
        finish(kb, entry, outcome)
    return Recorded(entry, returncode if returncode >= 0 else 128 - returncode)


def steady_end(started: datetime, ended: datetime, wall_s: float) -> tuple[datetime, str | None]:
    """The run's end, and what happened to the clock when it stepped back while the run ran (NTP, a person):
    then the end is the start plus the run's time on the monotonic clock, never a time before the start."""
    step_s = (ended - started).total_seconds() - wall_s
    if step_s >= -CLOCK_SLACK_S:
        return ended, None
    said = (
        f"the system clock stepped back {-step_s:.0f} s while the run ran: timings.ended is timings.started plus "
        f"the {wall_s:.1f} s the run took on a monotonic clock"
    )
    return started + timedelta(seconds=wall_s), said


def _running_entry(argv: list[str], info: RunInfo, cwd: Path, started: Any, given: list[str]) -> Entry:
    safe_argv = redact_args(argv)
    line = shlex.join(safe_argv)
    title = info.title or identity_title(info.workload, info.backend, info.mode) or command_title(safe_argv)
    provenance = {"source": "measured", "tool": "kb record", "environment": "run_time"}
    if given:
        provenance[GIVEN] = given
    entry = new_entry(
        new_id(title, started),
        title,
        "run",
        status="running",
        recorded=iso(started),
        provenance=provenance,
        command={"argv": safe_argv, "line": line, "cwd": str(cwd)},
        recorder=recorder_identity(),
        timings={"started": iso(started)},
        **info.fields(),
    )
    entry.body = info.body()
    return entry


def _note_output(entry: Entry, tee: Tee) -> None:
    if tee.cut:
        entry.data["command"]["output_cut"] = tee.cut
    if tee.held_open:
        entry.data["command"]["descendants_running"] = True


def recorder_identity() -> dict[str, Any]:
    """Who is recording: enough to tell later whether that process is still alive (see ingest.killed)."""
    import psutil

    return {"host": socket.gethostname(), "pid": os.getpid(), "started": psutil.Process().create_time()}


def _apply_capture(kb: KnowledgeBase, entry: Entry, captured: dict[str, Any]) -> None:
    data = entry.data
    if not captured:
        data.setdefault("provenance", {})["environment"] = "none"
        return
    data["versions"] = captured.get("versions") or {}
    data["hardware"] = captured.get("hardware") or {}
    data["environment"] = captured.get("environment") or {}
    data["command"]["python"] = captured.get("python")
    data["provenance"]["versions_from"] = captured.get("versions_source")
    if captured.get("notes"):
        data["provenance"]["capture_problems"] = captured["notes"]
    git = dict(captured.get("git") or {})
    diff = git.pop("diff", None)
    if diff:
        target = kb.attachment_target(entry, GIT_DIFF)
        atomic.write_text(target, redact_text(diff))
        git["diff"] = kb.relative(entry, target)
    data["git"] = git


def _outcome(returncode: int, interrupted: tuple[str, str] | None, ended: Any) -> Outcome:
    signal_name = signal.Signals(-returncode).name if returncode < 0 else None
    if interrupted is not None:
        name, origin = interrupted
        how = "from the terminal" if origin == "terminal" else "sent to kb record and passed on to the command"
        return Outcome(
            "interrupted",
            ended,
            returncode if returncode >= 0 else None,
            signal_name,
            observed={"class": "interrupted", "message": f"{name} {how}"},
        )
    if signal_name is not None:
        message = f"the command was killed by {signal_name}"
        if signal_name == "SIGKILL":
            message += " (the kernel's out-of-memory killer sends SIGKILL too: check `dmesg` or the job scheduler)"
        return Outcome("killed", ended, None, signal_name, observed={"message": message})
    if returncode != 0:
        return Outcome("failed", ended, returncode, None, observed={"message": f"exit code {returncode}"})
    return Outcome("completed", ended, 0, None)


def _not_started(kb: KnowledgeBase, entry: Entry, argv: list[str], exc: OSError) -> Recorded:
    """A command that could not be started is evidence too (a missing tool is an environment failure)."""
    missing = isinstance(exc, FileNotFoundError)
    code = EXIT_NOT_FOUND if missing else EXIT_NOT_EXECUTABLE
    reason = "command not found" if missing else f"cannot run the command: {exc.strerror}"
    failure = {"class": "environment", "message": f"{reason}: {argv[0]}"}
    finish(kb, entry, Outcome("failed", utc_now(), code, None, observed=failure))
    return Recorded(entry, code, started=False)
