"""`kb check`: every entry valid, every link pointing at an entry, and with --secrets no credential in any entry
or attachment; exit 1 otherwise (for hooks and CI)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check_command(
        ctx: typer.Context,
        json_: bool = typer.Option(
            False, "--json", help="Print JSON: the entries checked and each problem's path, line, field and message."
        ),
        secrets: bool = typer.Option(
            False,
            "--secrets",
            help="Also scan every entry and attachment (gzip too) for credentials: file:line and the rule that "
            "found one, never its value. Runs as a pre-commit hook.",
        ),
    ) -> None:
        """Validate every entry and every link; print each problem as file:line: field: message."""
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.check import problems
        from kb.index.db import reading

        kb, db = synced(ctx)
        with reading(db):
            found, checked = problems(kb, db)
        if secrets:
            from kb.errors import Problem
            from kb.secrets.scan import scan_base

            found += [Problem(leak.path, leak.line or None, "secrets", leak.message) for leak in scan_base(kb)]
        if json_:
            fields = ("path", "line", "field", "message")
            print_json({"checked": checked, "problems": [{f: getattr(p, f) for f in fields} for p in found]})
            raise typer.Exit(1 if found else 0)
        for problem in found:
            typer.echo(str(problem))
        typer.echo(f"{checked} entries checked, {len(found)} problem{'s' if len(found) != 1 else ''}", err=True)
        if found:
            raise typer.Exit(1)
