"""`kb init [PATH]`: make a knowledge base."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_command(
        path: Path = typer.Argument(Path("."), help="Folder for the knowledge base (made if missing)."),
    ) -> None:
        """Make a knowledge base: kb.toml, entries/, an ignored .kb/ cache folder and a .gitignore for the site."""
        from kb.gitfiles import write_gitignore
        from kb.store import KnowledgeBase

        kb, created = KnowledgeBase.init(path)
        ignored = write_gitignore(kb.root)
        if ignored and not created:
            typer.echo(f"Knowledge base at {kb.root}: .gitignore now ignores {' and '.join(ignored)}")
        elif created:
            typer.echo(f"Knowledge base ready at {kb.root}")
            typer.echo(f"  {kb.config_path.name}   settings\n  entries/  the evidence, one Markdown file each")
            typer.echo("  .kb/      derived caches (ignored by git, safe to delete)")
            typer.echo("  .gitignore  keeps the site and the caches out of git (see docs/team.md)")
            typer.echo("Next: kb record -- python train.py")
        else:
            typer.echo(f"Knowledge base already complete at {kb.root}; nothing changed")
