"""`kb schema`: the JSON Schema of entry front matter, for editors and other tools."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema_command(
        path: bool = typer.Option(False, "--path", help="Print where the schema file is instead of its text."),
    ) -> None:
        """Print the JSON Schema that entry front matter follows (point your editor's YAML plugin at it)."""
        from kb.model.validation import schema_path

        typer.echo(str(schema_path()) if path else schema_path().read_text("utf-8"), nl=path)
