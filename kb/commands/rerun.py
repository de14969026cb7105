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
        rerun_of, and print the comparison of the two. Shows exactly what will run and asks first (an entry
        is a file anyone can edit); `--yes` runs it without asking. Exits with the command's exit code."""
        import shlex
        import sys

        from ingest.rerun import check, rerun
        from kb.answers.compare import compare
        from kb.commands.common import knowledge_base
        from kb.errors import KbError
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
        emit(comparison_view(compare([done.original, entry])))
        raise typer.Exit(done.recorded.exit_code)
