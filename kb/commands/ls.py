"""`kb ls`: entries newest first, read straight from the files."""

from __future__ import annotations

from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("ls")
    def ls_command(
        ctx: typer.Context,
        kind: Optional[str] = typer.Option(
            None, "--kind", help="Only entries of this kind (run, report, decision, ...)."
        ),
        status: Optional[str] = typer.Option(None, "--status", help="Only entries with this status."),
        limit: int = typer.Option(50, "--limit", min=0, help="At most this many (0: all)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON: one object per entry."),
    ) -> None:
        """List entries, newest first. Broken entry files are reported on stderr and skipped."""
        from ingest.orphans import settle_orphans
        from kb.commands.common import knowledge_base, print_json
        from kb.listing import list_entries

        kb = knowledge_base(ctx)
        listed = list_entries(kb, kind=kind, status=status, limit=limit or None, settle=settle_orphans)
        for problem in listed.problems:
            typer.echo(f"kb: skipped {problem}", err=True)
        if json_:
            print_json([row.summary() for row in listed.entries])
            return
        from kb.render import console, entries_table

        if not listed.entries:
            typer.echo("No entries match." if (kind or status) else "No entries yet: kb record -- <command> makes one.")
            return
        console().print(entries_table(listed.entries))
