"""`kb compare A B [C ...]` or `kb compare --workload W --by backend`: entries side by side."""

from __future__ import annotations

from typing import Optional

import typer

HELP = """Compare entries side by side: what differs between them (versions, settings, hardware,
environment), then timings by phase, metrics with the ratio to the first entry and whether that is
better or worse, compile and fallback evidence, numerics and failures.

Give two or more entry ids (the first is the baseline), or a workload and a grouping: the newest
entry of each group is compared (--by backend, --by mode, --by version:torch).
"""


def register(app: typer.Typer) -> None:
    @app.command("compare", help=HELP)
    def compare_command(
        ctx: typer.Context,
        refs: Optional[list[str]] = typer.Argument(None, help="Entry ids (or unique starts of ids).", metavar="ID..."),
        workload: Optional[str] = typer.Option(None, "--workload", help="Compare the newest entries of a workload."),
        by: Optional[str] = typer.Option(None, "--by", help="Group by backend, mode or version:PACKAGE."),
        markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table (for a review)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from kb.answers.compare import compare
        from kb.commands.common import knowledge_base, print_json, synced
        from kb.errors import KbError

        if refs and (workload or by):
            raise KbError("give entry ids, or --workload with --by, not both")
        if refs:
            kb = knowledge_base(ctx)
            entries = [kb.load(ref) for ref in refs]
        elif workload and by:
            from kb.entry import Entry
            from kb.index.db import reading
            from kb.index.query import latest_per_group

            kb, db = synced(ctx)
            with reading(db):
                latest = latest_per_group(db, workload, by)
            entries = [Entry.read(kb.entries_path / path) for _, path in latest]
        else:
            raise KbError("give two or more entry ids, or --workload W --by backend|mode|version:PACKAGE")
        comparison = compare(entries)
        if json_:
            print_json(comparison.as_dict())
            return
        from kb.render import comparison_markdown, comparison_view, console

        if markdown:
            typer.echo(comparison_markdown(comparison))
            return
        console().print(comparison_view(comparison))
