"""`kb record` without a command: record an experiment that already ran.

From what a person knows (options, $EDITOR), from its logs (attached, and scanned for failure
signatures), and from a run folder an instrumented run wrote where no knowledge base was reachable
(`--from DIR`: the hand-over format, with the environment the run itself captured).
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ingest import editor, environment, signatures
from ingest.describe import RunInfo, command_title
from ingest.finish import OUTPUT_LOG, RUN_FILES_KEPT, RUN_FOLDER, Outcome, finish
from ingest.importers.regular import is_regular, kind_of, refuse_irregular
from ingest.runfolder import GIVEN, MANIFEST, PROTECTED, check_folder, given_fields, read_manifest
from kb.errors import KbError
from kb.model.entry import Entry, iso, new_entry, parse_time, utc_now
from kb.model.ids import new_id
from kb.secrets.redact import redact_text
from kb.store.knowledge_base import NAME_MAX, KnowledgeBase, masked_name, shown_name

# Findings that mean the run failed; the others (fallbacks, graph breaks, recompiles; an interrupt, which is
# its own status) do not fail a run by themselves.
ERROR_CLASSES = frozenset(
    {"oom", "compile_error", "compile_timeout", "unsupported_op", "environment", "numerical_mismatch", "timeout"}
)
NOTES_KEPT = 20  # lines about files not copied; the rest are counted


@dataclass
class AfterTheFact:
    status: str | None = None
    failure_class: str | None = None
    explain: str | None = None
    logs: list[Path] = field(default_factory=list)
    attach: list[Path] = field(default_factory=list)
    from_dir: Path | None = None
    edit: bool = False


def record_after(kb: KnowledgeBase, info: RunInfo, after: AfterTheFact, cwd: Path | None = None) -> Entry:
    for path in (*after.logs, *after.attach):
        refuse_irregular(path, "a file to attach")
        if not path.is_file():
            raise KbError(f"{path}: no such file to attach; check the path")
    manifest = _manifest_fields(check_folder(after.from_dir)) if after.from_dir else {}
    title = info.title or manifest.get("title") or _title(info, manifest)
    started = _manifest_time(manifest, "started") or utc_now()
    written = editor.edit(title, info.note or "") if after.edit else None
    status, proposed = _status(after, manifest)

    fields: dict[str, Any] = {**manifest, **info.fields()}
    fields.pop("title", None)
    fields.pop("status", None)
    if manifest.get("versions") or manifest.get("hardware"):
        fields["provenance"] = {"source": "measured", "tool": "kb record --from", "environment": "run_time"}
    else:
        captured = environment.capture(cwd or Path.cwd(), None, env_prefixes=environment.DEFAULT_ENV_PREFIXES)
        captured.pop("git", None)  # today's working tree says nothing about a run that already happened
        fields |= {key: captured[key] for key in ("versions", "hardware", "environment") if captured.get(key)}
        fields["provenance"] = {"source": "measured", "tool": "kb record", "environment": "record_time"}
    if after.from_dir and given_fields(info):  # the run folder's events are folded in: they never replace these
        fields["provenance"][GIVEN] = given_fields(info)
    entry = new_entry(new_id(title, started), title, "run", status=status, recorded=iso(utc_now()), **fields)
    entry.body = written.body() if written else info.body()
    entry = kb.create(entry)
    try:
        attached_logs = tuple(kb.attach(entry, path) for path in after.logs)
        for path in after.attach:
            kb.attach(entry, path)
        if after.from_dir:
            not_copied = _copy_run_folder(kb, entry, after.from_dir)
            if not_copied:
                entry.data["provenance"].setdefault("capture_problems", []).extend(not_copied)
    except BaseException:
        # An entry without the files it stands on would mislead (a Ctrl-C, a full disk): the sources are still
        # where they were, so take it back and let the recording be run again.
        shutil.rmtree(kb.attachments_path(entry), ignore_errors=True)
        (entry.path or kb.entry_path(entry.id)).unlink(missing_ok=True)
        raise
    stated = {"class": after.failure_class} if after.failure_class else {}
    explanation = redact_text(after.explain) if after.explain else (written.explanation if written else "")
    if explanation:
        stated["explanation"] = explanation
    observed = {"evidence": proposed} if proposed else None
    ended = _manifest_time(manifest, "ended")
    if ended is not None and ended < started:
        entry.data["provenance"].setdefault("capture_problems", []).append(
            f"{MANIFEST}: timings.ended is before timings.started: the run's clock stepped back; a wall_s the run "
            "measured itself is the duration to trust"
        )
    output = attached_logs[0] if attached_logs else kb.attachments_path(entry) / RUN_FOLDER / OUTPUT_LOG
    return finish(
        kb, entry, Outcome(status, ended, observed=observed, stated=stated), logs=attached_logs, output=output
    )


def _manifest_fields(folder: Path) -> dict[str, Any]:
    """The entry fields a run folder's run.json gives (identity fields are the recorder's, not the run's), its
    times checked: a time or duration that is none is refused by name (a NaN loss is evidence, a NaN time is not)."""
    manifest = read_manifest(folder)
    timings = manifest.get("timings")
    if isinstance(timings, dict):
        where = folder / MANIFEST
        for name in ("started", "ended"):
            if name in timings and not _is_time(timings[name]):
                raise KbError(
                    f"{where}: timings.{name}: {str(timings[name])[:40]!r} is not a time; write it as ISO 8601 "
                    "(2026-01-31T09:30:00Z) and import again"
                )
        for name, value in timings.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise KbError(f"{where}: timings.{name}: {value} is not a duration; fix it or leave it out")
    return {key: value for key, value in manifest.items() if key not in PROTECTED or key == "status"}


def _is_time(value: Any) -> bool:
    try:
        parse_time(value)
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def _title(info: RunInfo, manifest: dict[str, Any]) -> str:
    named = " ".join(part for part in (info.workload, info.backend, info.mode) if part)
    command = manifest.get("command") or {}
    argv = command.get("argv") if isinstance(command.get("argv"), list) else str(command.get("line") or "").split()
    what_ran = command_title([str(word) for word in argv]) if argv else None
    if named or what_ran:
        return named or what_ran
    raise KbError("name the run: give --title, or --workload (with --backend and --mode if you like)")


def _manifest_time(manifest: dict[str, Any], name: str) -> datetime | None:
    value = (manifest.get("timings") or {}).get(name)
    return parse_time(value) if isinstance(value, str) else None


def _status(after: AfterTheFact, manifest: dict[str, Any]) -> tuple[str, str | None]:
    """The run's status and, when it was inferred from a log, the line that says so."""
    if after.status:
        return after.status, None
    if manifest.get("status") == "running":
        return "killed", None  # the run's own record was never closed: it died without a word
    if manifest.get("status"):
        return manifest["status"], None
    if after.failure_class:
        return "failed", None
    for path in after.logs:
        finding = signatures.propose(signatures.scan_file(path))
        if finding is not None and finding.failure_class in ERROR_CLASSES:
            return "failed", f"{path.name}:{finding.line}: {finding.text}"
    return "completed", None


def _copy_run_folder(kb: KnowledgeBase, entry: Entry, source: Path) -> list[str]:
    """Copy the run's own regular files, at most RUN_FILES_KEPT of them in path order; one line for each file
    not copied as it was (a link, a FIFO, a device; a name too long to copy; the files past the bound)."""
    target_root = kb.attachments_path(entry) / RUN_FOLDER
    notes: list[str] = []
    copied = left = 0
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(root, d)))
        relative = Path(root).relative_to(source)
        (target_root / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            path = Path(root, name)
            shown = shown_name(str(relative / name))
            if not is_regular(path):  # a link could point anywhere on the machine, a FIFO or device never ends
                notes.append(f"{shown}: {_kind(path)}, not copied")
                continue
            if copied == RUN_FILES_KEPT:
                left += 1
                continue
            kept = masked_name(name)  # masked before it is cut, so no part of a credential outlives the cut
            if len(os.fsencode(name)) > NAME_MAX:
                notes.append(f"{shown}: a name of {len(os.fsencode(name))} bytes, copied as {shown_name(kept)}")
            kb.copy_in(path, target_root / relative / kept)
            copied += 1
    if not any(target_root.iterdir()):
        shutil.rmtree(target_root)
    if left:
        notes.insert(0, f"too many files: the run folder holds {copied + left:,} files; the first {copied:,} in "
                     f"path order are copied, {left:,} are not")  # fmt: skip
    return notes[:NOTES_KEPT] + ([f"and {len(notes) - NOTES_KEPT} more"] if len(notes) > NOTES_KEPT else [])


def _kind(path: Path) -> str:
    try:
        return kind_of(os.lstat(path).st_mode)
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
