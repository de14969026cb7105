"""`kb init [PATH]`: make a knowledge base, and say which backend the team runs on today (the incumbent)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

QUESTION = "Which backend does the team run on today (the incumbent every ratio is against, e.g. cuda)? Empty: later"


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init_command(
        path: Path = typer.Argument(Path("."), help="Folder for the knowledge base (made if missing)."),
        incumbent: Optional[str] = typer.Option(
            None,
            "--incumbent",
            metavar="BACKEND",
            help="The backend (and mode) the team runs on today, e.g. cuda or 'cuda eager': every board ratio is "
            "against it. Asked on a terminal when not given.",
        ),
    ) -> None:
        """Make a knowledge base: kb.toml, entries/, an ignored .kb/ cache folder and a .gitignore for the site."""
        from kb.store.config import set_incumbent
        from kb.store.gitfiles import write_gitignore
        from kb.store.knowledge_base import KnowledgeBase

        kb, created = KnowledgeBase.init(path)
        ignored = write_gitignore(kb.root)
        if incumbent is None and created and sys.stdin.isatty() and sys.stdout.isatty():
            incumbent = typer.prompt(QUESTION, default="", show_default=False).strip() or None
        if incumbent is not None:
            set_incumbent(kb.config_path, incumbent.strip())
        if created:
            typer.echo(f"Knowledge base ready at {kb.root}")
            typer.echo(f"  {kb.config_path.name}     settings\n  entries/    the evidence, one Markdown file each")
            typer.echo("  .kb/        derived caches (ignored by git, safe to delete)")
            typer.echo("  .gitignore  keeps the site and the caches out of git (see docs/team.md)")
        elif ignored:
            typer.echo(f"Knowledge base at {kb.root}: .gitignore now ignores {' and '.join(ignored)}")
        elif incumbent is None:
            typer.echo(f"Knowledge base already complete at {kb.root}; nothing changed")
        if incumbent is not None:
            typer.echo(
                f"Incumbent: {incumbent.strip() or '(none: the board guesses, and says so)'} ([answers] in kb.toml)"
            )
        elif created:
            typer.echo("Incumbent: not set; the board guesses one and says so (kb init --incumbent cuda sets it)")
        if created:
            typer.echo("Next: kb record -- python train.py")
