"""`kb init [PATH]`: make a knowledge base."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_command(
        path: Path = typer.Argument(Path("."), help="Folder for the knowledge base (made if missing)."),
    ) -> None:
        """Make a knowledge base: kb.toml, entries/ and an ignored .kb/ cache folder."""
        from kb.store import KnowledgeBase

        kb, created = KnowledgeBase.init(path)
        if created:
            typer.echo(f"Knowledge base ready at {kb.root}")
            typer.echo(f"  {kb.config_path.name}   settings\n  entries/  the evidence, one Markdown file each")
            typer.echo("  .kb/      derived caches (ignored by git, safe to delete)")
            typer.echo("Next: kb record -- python train.py")
        else:
            typer.echo(f"Knowledge base already complete at {kb.root}; nothing changed")
