"""What every `--json` prints: one envelope, `{"kb": 1, "command": "ingest junit", "data": ...}`, so a script
checks one shape and reads the command's answer under `data`. Kept apart from kb.commands.common, whose imports
(the entry model, the store) a command that prints no JSON need not pay for."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

JSON_FORMAT = 1  # the envelope's version: raised only by a change that would break a script reading it

_command: list[str] = []  # the command being run, as typed after `kb` ("ingest junit")


def note_command(ctx: typer.Context) -> None:
    """The callback of each command group (`kb ingest`): the name of its command that runs."""
    if ctx.invoked_subcommand:
        _command.append(ctx.invoked_subcommand)


def note_top_command(ctx: typer.Context) -> None:
    """Called by the callback of `kb` itself, first for each command line."""
    _command.clear()
    note_command(ctx)


def print_json(data: Any) -> None:
    envelope = {"kb": JSON_FORMAT, "command": " ".join(_command), "data": data}
    json.dump(envelope, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
