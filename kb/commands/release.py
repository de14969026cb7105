"""`kb release PACKAGE VERSION`: record a backend or library release, so revisit triggers can fire."""

from __future__ import annotations

from typing import Optional

import typer

from kb.commands import written


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
        json_: bool = written.JSON,
    ) -> None:
        """Record a release of a backend or library (kind release); decisions with a release trigger see it."""
        from datetime import date

        from packaging.version import InvalidVersion, Version

        from kb.answers.decisions import new_release, recorded_release
        from kb.commands.common import synced
        from kb.errors import KbError
        from kb.index.db import reading
        from kb.store.authors import current_author

        try:
            Version(version)
            when = date.fromisoformat(date_) if date_ else date.today()
        except InvalidVersion:
            raise KbError(f"{version!r} is not a version kb can order (PEP 440), e.g. 2.27.1") from None
        except ValueError:
            raise KbError(f"--date {date_!r}: expected a date like 2026-11-30") from None
        kb, db = synced(ctx)  # with what a pull brought in: a teammate may have recorded it already
        with reading(db):
            existing = recorded_release(db, package, version)
        if existing is not None:
            raise KbError(f"{package} {version} is already recorded as {existing}; nothing written")
        entry = new_release(kb, package, version, when=when, url=url, notes=notes, author=current_author(kb.root))
        written.report_written(entry, f"kb: recorded release {entry.id}", json_)
        # On stderr: stdout holds the new id (or its JSON), for scripts.
        made_due = due_by(ctx, entry.id)
        for item in made_due:
            typer.echo(f"{item.decision.id}  {item.decision.title}", err=True)
            for reason in item.reasons:
                typer.echo(f"  - {reason}", err=True)
        if made_due:
            plural = "s" if len(made_due) > 1 else ""
            typer.echo(f"kb: {len(made_due)} decision{plural} due for review after this release", err=True)


def due_by(ctx: typer.Context, release_id: str) -> list:
    """The decisions a newly recorded release makes due (those whose fired triggers point at it)."""
    from datetime import date

    from kb.answers.decisions import TriggerState, due, parse_trigger
    from kb.commands.common import synced
    from kb.index import answers
    from kb.index.db import reading
    from kb.model.entry import Entry

    kb, db = synced(ctx)
    with reading(db):
        decisions = [Entry.read(kb.entries_path / path) for path in answers.decision_paths(db)]
        found = due(decisions, db, date.today())

    def by_release(state: TriggerState) -> bool:
        # A `when:` trigger names the releases its runs used too, but runs made it due, not this release.
        return release_id in state.releases and parse_trigger(state.text).kind == "release"

    return [item for item in found if any(by_release(state) for state in item.fired)]
