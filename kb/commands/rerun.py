"""`kb rerun ID`: repeat a recorded run on today's software and compare the two."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("rerun")
    def rerun_command(
        ctx: typer.Context,
        ref: str = typer.Argument(..., help="The run to repeat (an id or a unique start of one).", metavar="ID"),
        yes: bool = typer.Option(False, "--yes", "-y", help="Run the command shown without asking."),
        json_: bool = typer.Option(
            False, "--json", help="Print the new entry and the agreement verdict as JSON (the run's output on stderr)."
        ),
    ) -> None:
        """Run a recorded command again (same command line, settings and folder), record it linked with
        rerun_of, and print the comparison of the two and whether the rerun agrees with the original: a
        reproduction attempt when another author or host runs it, judged by kb's one verdict rule (each side
        with its repeats: n, interval, floor). Shows exactly what will run and asks first (an entry
        is a file anyone can edit); `--yes` runs it without asking. `--json` prints the new entry's id, path and
        status and the agreement (the figure, the runs of each side, the verdict with n, interval and floor),
        with the command's own output on stderr. Exits with the command's exit code."""
        import shlex
        import sys
        import textwrap

        from ingest.rerun import check, rerun
        from kb.answers.compare import agreement, compare
        from kb.commands.common import knowledge_base, synced
        from kb.errors import KbError
        from kb.index.db import reading
        from kb.terminal.rich_text import COMPARISON_WIDTH, comparison_view, emit
        from kb.text.answer_lines import WIDTH

        kb = knowledge_base(ctx)
        original, argv, folder, warnings = check(kb, ref)
        for warning in warnings:
            typer.echo(f"kb: warning: {warning}", err=True)
        typer.echo(f"kb: will run, in {folder}:\n  {shlex.join(argv)}", err=True)
        if not yes:
            if not sys.stdin.isatty():
                raise KbError(f"kb rerun runs the command above, from {original.id}; pass --yes to run it")
            if not typer.confirm("Run it?", default=False, err=True):
                raise typer.Exit(1)
        done = rerun(kb, ref, stdout=sys.stderr.buffer if json_ else None)  # stdout holds the JSON alone
        entry = done.recorded.entry
        typer.echo(f"kb: recorded {entry.id} ({entry.status}), a rerun of {done.original.id}", err=True)
        floor = kb.config.answers.floor
        kb, db = synced(ctx)
        with reading(db):
            agreed = agreement(kb, db, done.original, entry, floor)
        if not json_:  # the table stands on the same pooled sides as the agreement line: one verdict, not two
            sides = [[kb.load(run) for run in runs] for runs in (agreed.original_runs, agreed.rerun_runs)]
            pooled = sides if all(sides) else None
            emit(comparison_view(compare([done.original, entry], pooled, floor=floor)), COMPARISON_WIDTH)
        if json_:
            from dataclasses import asdict

            from kb.commands.envelope import print_json
            from kb.model.ids import short_id

            print_json({"id": entry.id, "short_id": short_id(entry.id), "path": str(entry.path), "kind": entry.kind,
                        "status": entry.status, "rerun_of": done.original.id, "exit_code": done.recorded.exit_code,
                        "agreement": {**asdict(agreed), "text": agreed.text()}})  # fmt: skip
        else:
            typer.echo("\n".join(textwrap.wrap(agreed.text(), WIDTH, subsequent_indent="  ")))
        raise typer.Exit(done.recorded.exit_code)
