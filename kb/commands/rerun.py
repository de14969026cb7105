"""`kb rerun ID`: repeat a recorded run on today's software and compare the two."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("rerun")
    def rerun_command(
        ctx: typer.Context,
        ref: str = typer.Argument(..., help="The run to repeat (an id or a unique start of one).", metavar="ID"),
    ) -> None:
        """Run a recorded command again (same command line, settings and folder), record it linked with
        rerun_of, and print the comparison of the two. Exits with the command's exit code."""
        from ingest.rerun import check, rerun
        from kb.answers.compare import compare
        from kb.commands.common import knowledge_base
        from kb.render import comparison_view, console

        kb = knowledge_base(ctx)
        for warning in check(kb, ref)[3]:
            typer.echo(f"kb: warning: {warning}", err=True)
        done = rerun(kb, ref)
        entry = done.recorded.entry
        typer.echo(f"kb: recorded {entry.id} ({entry.status}), a rerun of {done.original.id}", err=True)
        console().print(comparison_view(compare([done.original, entry])))
        raise typer.Exit(done.recorded.exit_code)
