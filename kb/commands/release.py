"""`kb release PACKAGE VERSION`: record a backend or library release, so revisit triggers can fire."""

from __future__ import annotations

from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("release")
    def release_command(
        ctx: typer.Context,
        package: str = typer.Argument(..., help="The distribution, e.g. torch-neuronx."),
        version: str = typer.Argument(..., help="Its version, e.g. 2.27.1."),
        date_: Optional[str] = typer.Option(
            None, "--date", help="Release date (default: today).", metavar="YYYY-MM-DD"
        ),
        url: Optional[str] = typer.Option(None, "--url", help="Release notes or announcement."),
        notes: Optional[str] = typer.Option(None, "--notes", help="What changed, in a sentence or two."),
    ) -> None:
        """Record a release of a backend or library (kind release); decisions with a release trigger see it."""
        from datetime import date

        from packaging.version import InvalidVersion, Version

        from kb.commands.common import knowledge_base
        from kb.answers.decisions import new_release
        from kb.errors import KbError

        try:
            Version(version)
            when = date.fromisoformat(date_) if date_ else date.today()
        except InvalidVersion:
            raise KbError(f"{version!r} is not a version kb can order (PEP 440), e.g. 2.27.1") from None
        except ValueError:
            raise KbError(f"--date {date_!r}: expected a date like 2026-11-30") from None
        entry = new_release(knowledge_base(ctx), package, version, when=when, url=url, notes=notes)
        typer.echo(f"kb: recorded release {entry.id} in {entry.path}", err=True)
