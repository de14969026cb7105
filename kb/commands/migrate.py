"""`kb migrate [--write] [--diff]`: rewrite entries written by an older kb in the current entry format."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate_command(
        ctx: typer.Context,
        write: bool = typer.Option(False, "--write", help="Rewrite the files (after a backup); without it, only list."),
        diff: bool = typer.Option(False, "--diff", help="Show each change as a unified diff."),
    ) -> None:
        """Bring entries written by an older kb to the current entry format (kb reads them either way). Lists
        what would change; --write first saves the files as they are to .kb/backups/migrate-TIME.tar.gz, then
        replaces each atomically. Files that cannot be read are reported and skipped (exit 1); the rest go on."""
        from kb.commands.common import knowledge_base, report_problems
        from kb.model.validation import SCHEMA_VERSION
        from kb.store import migrate

        kb = knowledge_base(ctx)
        found = migrate.plan(kb)
        problems = found.problems
        done = found.changes
        if write:
            result = migrate.write(kb, found.changes)
            if result.backup is not None:
                typer.echo(f"kb: backup of the files as they were: {result.backup}", err=True)
            done, problems = result.written, problems + result.problems
        for change in done:
            name = change.path.relative_to(kb.root).as_posix()
            verb = "migrated" if write else "would migrate"
            typer.echo(change.diff(name) if diff else f"{verb} {name}: schema {change.version} -> {SCHEMA_VERSION}")
        report_problems(problems)
        typer.echo(_summary(len(done), found.current, len(problems), write, SCHEMA_VERSION), err=True)
        if problems:
            raise typer.Exit(1)


def _summary(changed: int, current: int, skipped: int, write: bool, version: int) -> str:
    done = f"{changed} migrated" if write else f"{changed} to migrate"
    line = f"{done}, {current} already at schema {version}, {skipped} skipped"
    if changed and not write:
        line += "; run 'kb migrate --write' to rewrite them (a backup is made first)"
    return line
