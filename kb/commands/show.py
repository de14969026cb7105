"""`kb show ID`: one entry, for a person or (--json) for a script."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from kb.model.entry import Entry
    from kb.store.knowledge_base import KnowledgeBase


def register(app: typer.Typer) -> None:
    @app.command("show")
    def show_command(
        ctx: typer.Context,
        ref: str = typer.Argument(..., help="An entry id, its random suffix (b5c3dc) or its file.", metavar="ID"),
        all_: bool = typer.Option(False, "--all", help="Also every field as stored, after the summary."),
        json_: bool = typer.Option(False, "--json", help="Print the front matter and body as JSON."),
    ) -> None:
        """Show one entry: the answer first (how it ended, how fast, preparation, placement, numerics,
        failure), then compile frames, graph breaks, placement, timings, settings, versions, notes and output."""
        from kb.commands.common import knowledge_base, settle_orphan
        from kb.commands.envelope import print_json
        from kb.store.orphans import settle_orphans

        kb = knowledge_base(ctx)
        (entry,) = settle_orphans(kb, [kb.load(ref)], settle_orphan)
        found = _progress(kb, entry)
        if json_:
            shown = {"path": str(entry.path), "front_matter": entry.data, "body": entry.body}
            print_json(shown | ({"progress": found} if found is not None else {}))
            return
        import time
        from functools import cache, partial

        from kb.terminal.rich_text import emit, entry_view
        from kb.text.headline import progress

        pairs = progress(found, time.time()) if found is not None else None
        emit(entry_view(entry, everything=all_, short=cache(partial(_short_id, kb)), progress=pairs))
        if entry.kind == "decision":
            from kb.commands.revisit import revisit_lines

            for line in revisit_lines(ctx, entry):
                typer.echo(line)


def _progress(kb: KnowledgeBase, entry: Entry) -> dict[str, Any] | None:
    """A running entry's progress so far, from the steps its run streams into the run folder."""
    if entry.status != "running":
        return None
    from ingest.finish import RUN_FOLDER
    from ingest.steps import progress

    return progress(kb.attachments_path(entry) / RUN_FOLDER)


def _short_id(kb: KnowledgeBase, entry_id: str) -> str:
    """The suffix when it finds this entry alone, else the whole id (two entries can share a suffix)."""
    from kb.errors import EntryNotFound
    from kb.model.ids import suffix

    tail = suffix(entry_id)
    try:
        return tail if tail and kb.locate(tail).stem == entry_id else entry_id
    except EntryNotFound:
        return entry_id
