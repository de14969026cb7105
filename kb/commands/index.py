"""`kb index [--rebuild]`: bring the SQLite and full-text indexes up to date with the entries."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("index")
    def index_command(
        ctx: typer.Context,
        rebuild: bool = typer.Option(False, "--rebuild", help="Throw the indexes away and build them from scratch."),
    ) -> None:
        """Update the indexes (every query command does this first, so you rarely need to)."""
        from kb.commands.common import knowledge_base, report_problems
        from kb.index.sync import sync

        report = sync(knowledge_base(ctx), rebuild=rebuild)
        report_problems(report.problems)
        typer.echo(f"Indexed: {report.summary()}")
