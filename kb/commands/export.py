"""`kb export --parquet DIR`: the knowledge base's entities as files other engines query."""

from __future__ import annotations

from pathlib import Path

import typer

HELP = """Export the knowledge base for engines analysts already use: one Parquet file per entity
(entries, metrics, timings, versions, failures, tags, settings, decisions) in DIR, for DuckDB, pandas,
Spark or a BI tool. The schema is in docs/team.md; a file is replaced whole, never left half written.
Needs pyarrow (pip install 'kb[export]').
"""


def register(app: typer.Typer) -> None:
    @app.command("export", help=HELP)
    def export_command(
        ctx: typer.Context,
        parquet: Path = typer.Option(..., "--parquet", help="The folder for the Parquet files.", metavar="DIR"),
        json_: bool = typer.Option(False, "--json", help="Print each file's table, path and rows as JSON."),
    ) -> None:
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.db import reading
        from kb.index.export import total_rows
        from kb.index.parquet import export_parquet
        from kb.terminal.progress import Progress
        from kb.text import humanize

        kb, db = synced(ctx)
        with reading(db), Progress("Exporting", total_rows(db), "rows") as step:
            written = export_parquet(db, parquet, progress=step, entries=kb.entries_path)
        if json_:
            print_json([{"table": w.table, "path": str(w.path), "rows": w.rows} for w in written])
            return
        for item in written:
            size = humanize.size(item.path.stat().st_size)
            typer.echo(f"{item.table:<10} {humanize.number(item.rows):>11} rows  {size:>9}  {item.path.name}")
        typer.echo(f"Exported to {parquet}")
