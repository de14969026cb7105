"""`kb ls`: entries by filters, newest first or sorted by any metric or timing, from the index."""

from __future__ import annotations

from typing import Optional

import typer

from kb.commands import filters as opt


def register(app: typer.Typer) -> None:
    @app.command("ls")
    def ls_command(
        ctx: typer.Context,
        backend: Optional[str] = opt.BACKEND,
        workload: Optional[str] = opt.WORKLOAD,
        status: Optional[str] = opt.STATUS,
        kind: Optional[str] = opt.KIND,
        mode: Optional[str] = opt.MODE,
        failure: Optional[str] = opt.FAILURE,
        tag: list[str] = opt.TAG,
        since: Optional[str] = opt.SINCE,
        until: Optional[str] = opt.UNTIL,
        package: list[str] = opt.PACKAGE,
        setting: list[str] = opt.SETTING,
        sort: str = typer.Option("recorded", "--sort", help="recorded, wall_s, ..., metric.NAME or timings.NAME."),
        ascending: bool = typer.Option(False, "--asc", help="Smallest first (default: largest or newest first)."),
        limit: int = typer.Option(50, "--limit", min=0, help="At most this many (0: all)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON: one object per entry."),
        csv_: bool = typer.Option(False, "--csv", help="Print CSV with a header row."),
    ) -> None:
        """List entries, newest first. Broken entry files are reported on stderr and skipped.

        In a terminal: a table that fits its width, with short ids (the random suffix, which every command
        takes). In a pipe: one tab-separated line per entry, no header (id, status, kind, workload,
        backend, mode, failure, wall time, then the sort figure if any, and the title last)."""
        from kb.commands.common import report_problems, synced
        from kb.commands.envelope import print_json
        from kb.index.query import list_entries
        from kb.index.sync import stored_problems

        chosen = opt.build(backend, workload, status, kind, mode, failure, tag, since, until, package, setting)
        kb, db = synced(ctx)
        opt.check_known(chosen, db)
        report_problems(stored_problems(kb, db))
        rows = list_entries(db, chosen, sort=sort, ascending=ascending, limit=limit or None)
        if json_:
            print_json(rows)
            return
        if csv_:
            from kb.terminal.plain import write_csv

            write_csv(rows)
            return
        if not rows:
            typer.echo(
                "No entries match." if not chosen.empty() else "No entries yet: kb record -- <command> makes one."
            )
            return
        from kb.terminal.plain import piped, rows_lines, write_lines

        sorted_by = sort if "." in sort else None
        if piped():
            write_lines(rows_lines(rows, sorted_by))
            return
        from kb.terminal.rich_text import emit_table, rows_table

        emit_table(db, rows, lambda short: rows_table(rows, sorted_by, short=short))
