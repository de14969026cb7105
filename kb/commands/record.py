"""`kb record [OPTIONS] -- COMMAND...` records a run; without a command it records one that already ran."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from kb.commands import describing, written
from kb.commands.filters import check_choice
from kb.errors import KbError
from kb.model.taxonomy import FAILURE_CLASSES, STATUSES

if TYPE_CHECKING:
    from kb.model.entry import Entry
    from kb.store.knowledge_base import KnowledgeBase

HELP = """Record a run as an entry in the knowledge base.

With a command (after --), run it with its output passed through live and write an entry that says
what ran, on what, how long it took and how it ended, also when it fails, is interrupted or killed.
kb exits with the command's own exit code.

Without a command, record an experiment that already ran: from the options, attached logs (scanned
for known failure signatures), a run folder written by an instrumented run (--from), and notes typed
in $EDITOR (opened in a terminal unless --note or --no-edit is given).

The command can hand results to kb while it runs: see docs/record.md (KB_RUN_DIR).
"""


def register(app: typer.Typer) -> None:
    @app.command("record", help=HELP, context_settings={"allow_interspersed_args": False})
    def record_command(
        ctx: typer.Context,
        command: Optional[list[str]] = typer.Argument(None, help="The command to run and record (after --)."),
        title: Optional[str] = typer.Option(
            None, "--title", help="A title (default: from workload/backend/mode, else the script or module run)."
        ),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        setting: list[str] = describing.SETTING,
        metric: list[str] = typer.Option(
            [], "--metric", help="name=value[unit], e.g. tokens_per_s=5120tokens/s; repeatable."
        ),
        note: Optional[str] = describing.NOTE,
        reference: Optional[str] = typer.Option(
            None, "--reference", help="Id of the entry this run is checked against."
        ),
        author: Optional[str] = typer.Option(
            None, "--author", help="Who ran it (default: git's user.name <user.email>, else your login)."
        ),
        status: Optional[str] = typer.Option(None, "--status", help=f"Without a command: {', '.join(STATUSES[:-1])}."),
        failure: Optional[str] = typer.Option(
            None, "--failure", help="Without a command: the failure class.", metavar="CLASS"
        ),
        explain: Optional[str] = typer.Option(None, "--explain", help="Without a command: why it failed."),
        log: list[Path] = typer.Option([], "--log", help="Without a command: a log to attach and scan; repeatable."),
        attach: list[Path] = typer.Option([], "--attach", help="Without a command: a file to attach; repeatable."),
        from_dir: Optional[Path] = typer.Option(
            None, "--from", help="Without a command: a run folder to import.", metavar="DIR"
        ),
        edit: Optional[bool] = typer.Option(
            None, "--edit/--no-edit", help="Write notes in $EDITOR (default: in a terminal, unless --note)."
        ),
        keep_unstarted: bool = typer.Option(
            True,
            "--keep-unstarted/--discard-unstarted",
            help="With a command that cannot start (not found, not executable): keep its failed entry (a missing "
            "tool is evidence about an environment) or write none.",
        ),
        code_dir: Optional[Path] = typer.Option(
            None,
            "--code-dir",
            help="With a command: the git repository of the code that runs (default: the repository of the "
            "command's script, else of the working folder; never the knowledge base's own).",
            metavar="DIR",
        ),
        json_: bool = typer.Option(
            False, "--json", help="Print the new entry's id, path, kind and status as JSON (after the output)."
        ),
        adaptation: list[str] = typer.Option(
            [],
            "--adaptation",
            metavar="TEXT",
            help="What had to change to make it run (code, config, a kernel), and the effort; repeatable. "
            "The editor's Adaptations heading counts too.",
        ),
        repeat: int = typer.Option(
            1,
            "--repeat",
            min=1,
            metavar="N",
            help="With a command: run it N times, one entry each, tagged repeat-<group> so the board knows them as "
            "repeats (verdicts need 3 a side). Stops at an interrupted or killed run.",
        ),
    ) -> None:
        from ingest.describe import RunInfo, parse_all
        from kb.commands.common import knowledge_base
        from kb.store.authors import current_author

        settings, metrics = parse_all(setting, metric)
        check_choice("--status", status, STATUSES[:-1])
        check_choice("--failure", failure, FAILURE_CLASSES)
        info = RunInfo(
            title=title,
            workload=workload,
            backend=backend,
            mode=mode,
            tags=tag,
            settings=settings,
            metrics=metrics,
            note=note,
            reference=reference,
            author=author,
        )
        kb = knowledge_base(ctx)
        info.signed_by = current_author(kb.root)
        if reference:
            info.reference = kb.load(reference).id  # it must exist (fail before running); a short id becomes whole
        if command:
            after_only = {
                "--status": status,
                "--failure": failure,
                "--explain": explain,
                "--log": log,
                "--attach": attach,
                "--from": from_dir,
            }
            if code_dir is not None and not code_dir.is_dir():
                raise KbError(f"--code-dir {code_dir}: no such folder; name the folder of the code that runs")
            given = [name for name, value in after_only.items() if value]
            if given:
                raise KbError(
                    f"{', '.join(given)} describe a run that already happened; "
                    "drop them, or drop the command to record after the fact"
                )
            from ingest.recorder import record_command as run_and_record

            group = repeat_group() if repeat > 1 else None
            first_failure = 0
            for number in range(1, repeat + 1):
                run_info = dataclasses.replace(info, tags=[*info.tags, group] if group else list(info.tags))
                recorded = run_and_record(kb, command, run_info, code_dir=code_dir.resolve() if code_dir else None)
                entry = with_adaptations(kb, recorded.entry, adaptation)
                if not recorded.started:
                    typer.echo(f"kb: {(entry.data.get('failure') or {}).get('message')}", err=True)
                    if not keep_unstarted:
                        kb.remove(entry)
                        typer.echo("kb: no entry kept (--discard-unstarted)", err=True)
                        raise typer.Exit(recorded.exit_code)
                # The command's output is on stdout: the id goes there only when --json asks for it.
                of = f" (run {number} of {repeat}, {group})" if group else ""
                written.report_written(entry, f"kb: recorded {entry.id} ({entry.status}){of}", json_,
                                       stdout_free=False)  # fmt: skip
                first_failure = first_failure or recorded.exit_code
                if not recorded.started or entry.status in ("interrupted", "killed"):
                    if number < repeat:
                        typer.echo(f"kb: stopped after run {number} of {repeat}: it was {entry.status}", err=True)
                    break
            raise typer.Exit(first_failure)
        if repeat > 1:
            raise KbError("--repeat runs a command again: give the command after --")

        if code_dir is not None:
            raise KbError("--code-dir goes with a command (after --): a run recorded after the fact has no git state")
        from ingest.after import AfterTheFact, record_after

        interactive = sys.stdin.isatty() and sys.stdout.isatty()
        after = AfterTheFact(
            status=status,
            failure_class=failure,
            explain=explain,
            logs=log,
            attach=attach,
            from_dir=from_dir,
            edit=edit if edit is not None else (interactive and note is None),
        )
        entry = with_adaptations(kb, record_after(kb, info, after), adaptation)
        written.report_written(entry, f"kb: recorded {entry.id} ({entry.status})", json_)
        failure_found = entry.data.get("failure") or {}
        if failure_found.get("assigned") == "auto" and failure_found.get("evidence"):
            typer.echo(
                f"kb: failure class {failure_found['class']} proposed from {failure_found['evidence']}; "
                "pass --failure CLASS to correct it",
                err=True,
            )


def repeat_group() -> str:
    """The tag the runs of one `--repeat` share: `repeat-` and 6 random hex digits."""
    import secrets

    return f"repeat-{secrets.token_hex(3)}"


def with_adaptations(kb: KnowledgeBase, entry: Entry, given: list[str]) -> Entry:
    """The entry with its adaptations: those given with --adaptation, and what was written under the editor
    template's Adaptations heading, as the front matter's `adaptations` list the answers read."""
    found = [{"what": text.strip(), "kind": "other"} for text in given if text.strip()]
    written = adaptations_written(entry.body or "")
    if written and not entry.data.get("adaptations"):
        found.append({"what": written, "kind": "other"})
    if not found:
        return entry
    entry.data["adaptations"] = [*(entry.data.get("adaptations") or []), *found]
    kb.save(entry)
    return entry


def adaptations_written(body: str) -> str:
    """The text under an `## Adaptations` heading of an entry's body, up to the next heading."""
    import re

    found = re.search(r"(?ms)^## Adaptations[ \t]*\n(.*?)(?=^## |\Z)", body)
    return found.group(1).strip() if found else ""
