"""`kb rerun ID`: repeat a recorded run on today's software and compare the two."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("rerun")
    def rerun_command(
        ctx: typer.Context,
        ref: str = typer.Argument(..., help="The run to repeat (an id or a unique start of one).", metavar="ID"),
        yes: bool = typer.Option(False, "--yes", "-y", help="Run the command shown without asking."),
    ) -> None:
        """Run a recorded command again (same command line, settings and folder), record it linked with
        rerun_of, and print the comparison of the two and whether the rerun agrees with the original: a
        reproduction attempt when another author or host runs it, judged by kb's one verdict rule (each side
        with its repeats: n, interval, floor). Shows exactly what will run and asks first (an entry
        is a file anyone can edit); `--yes` runs it without asking. Exits with the command's exit code."""
        import shlex
        import sys
        import textwrap

        from ingest.rerun import check, rerun
        from kb.answers.compare import agreement, compare
        from kb.answers_text import WIDTH
        from kb.commands.common import knowledge_base, synced
        from kb.errors import KbError
        from kb.index.db import reading
        from kb.render import comparison_view, emit

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
        done = rerun(kb, ref)
        entry = done.recorded.entry
        typer.echo(f"kb: recorded {entry.id} ({entry.status}), a rerun of {done.original.id}", err=True)
        floor = kb.config.answers.floor
        emit(comparison_view(compare([done.original, entry], floor=floor)))
        kb, db = synced(ctx)
        with reading(db):
            agreed = agreement(kb, db, done.original, entry, floor)
        typer.echo("\n".join(textwrap.wrap(agreed.text(), WIDTH, subsequent_indent="  ")))
        raise typer.Exit(done.recorded.exit_code)
