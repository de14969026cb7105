"""What a command that writes an entry prints: a sentence for people on stderr, and on stdout the new id
alone (for `ID=$(kb add ...)`) or, with --json, the entry's id, short id, path, kind and status."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from kb.model.entry import Entry

JSON = typer.Option(False, "--json", help="Print the new entry's id, short id, path, kind and status as JSON.")


def report_written(entry: Entry, sentence: str, json_: bool, *, stdout_free: bool = True) -> None:
    """`sentence` on stderr, then the entry's file on a line of its own (a path is as long as it is, the sentence
    stays within 80 columns); the id on stdout when stdout is kb's own (`stdout_free`), the JSON when asked."""
    from kb.commands.envelope import print_json
    from kb.model.ids import short_id
    from kb.terminal.plain import with_path

    typer.echo(with_path(sentence, entry.path), err=True)
    if json_:
        fields = {"id": entry.id, "short_id": short_id(entry.id), "path": str(entry.path), "kind": entry.kind}
        print_json({**fields, "status": entry.status})
    elif stdout_free:
        typer.echo(entry.id)
