"""The `kb` command: a thin Typer layer over the library. Commands live in kb/commands/, one module each.

Start-up stays fast: nothing here imports torch, whoosh, sqlite-utils or markdown, and each command
imports what it needs when it runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from kb import __version__
from kb.errors import KbError

ENV_DEBUG = "KB_DEBUG"

app = typer.Typer(
    name="kb",
    help="Evidence about PyTorch runs on hardware backends: record, find, compare, decide.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kb {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    kb: Optional[Path] = typer.Option(
        None,
        "--kb",
        help="The knowledge base folder (default: $KB_HOME, else the nearest folder upward holding kb.toml).",
        metavar="PATH",
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    from kb.commands.envelope import note_top_command

    ctx.obj = {"kb": kb}
    note_top_command(ctx)


# One module per command in kb/commands/, listed in the order `kb --help` shows them.
COMMANDS = ("init", "record", "add", "ingest", "rerun", "show", "ls", "search", "board", "compare", "trend", "decide",
            "release", "revisit", "expect", "check", "index", "migrate", "site", "export", "schema")  # fmt: skip


def _register() -> None:
    from importlib import import_module

    from kb.launch import asked_command

    asked = asked_command(COMMANDS)  # the `kb` program registers only the command it runs (kb/launch.py)
    for name in COMMANDS if asked is None else (asked,):
        import_module(f"kb.commands.{name}").register(app)


_register()


def main(command: Callable[[], object] = app) -> None:
    """Entry point: user errors become one line on stderr and exit code 1; tracebacks only with KB_DEBUG=1.

    `command` is the app, or the Click command Typer made of it (kb watch's fork server makes it once)."""
    try:
        command()
    except KbError as exc:
        if os.environ.get(ENV_DEBUG):
            raise
        for line in str(exc).splitlines():
            print(f"kb: error: {line}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("kb: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:  # a file the command was given that cannot be read or written (too long a name...)
        if os.environ.get(ENV_DEBUG):
            raise
        name = str(exc.filename or "")
        where = f"{name if len(name) <= 200 else name[:120] + '...' + name[-60:]}: " if name else ""
        print(f"kb: error: {where}{exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)
