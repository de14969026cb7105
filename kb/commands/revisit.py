"""`kb revisit [--check]`: the decisions that newer evidence or releases say to look at again."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("revisit")
    def revisit_command(
        ctx: typer.Context,
        check: bool = typer.Option(False, "--check", help="Exit 1 when any decision is due (for a scheduled job)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the decisions that are due, each with its reasons and the entries to look at."""
        from datetime import date

        from kb.commands.common import print_json, synced
        from kb.answers.decisions import due
        from kb.entry import Entry
        from kb.index.db import reading

        kb, db = synced(ctx)
        with reading(db):
            paths = [row[0] for row in db.execute("SELECT path FROM entries WHERE kind = 'decision' ORDER BY recorded")]
            decisions = [Entry.read(kb.entries_path / path) for path in paths]
            found = due(decisions, db, date.today())
        if json_:
            print_json(
                [
                    {"id": d.decision.id, "title": d.decision.title, "reasons": d.reasons, "entries": d.entries}
                    for d in found
                ]
            )
        elif not found:
            typer.echo(f"No decision is due ({len(decisions)} decision{'s' if len(decisions) != 1 else ''} checked).")
        for item in [] if json_ else found:
            typer.echo(f"{item.decision.id}  {item.decision.title}")
            for reason in item.reasons:
                typer.echo(f"  - {reason}")
            if item.entries:
                typer.echo(f"  look at: {', '.join(item.entries[:10])}" + (" ..." if len(item.entries) > 10 else ""))
        if check and found:
            raise typer.Exit(1)
