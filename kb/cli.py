"""The `kb` command: a thin Typer layer over the library. Commands live in kb/commands/, one module each.

Start-up stays fast: the command table below names each command's module and short help, so `kb --help` and
`kb COMMAND` import only the module of the command that runs (as pip's `commands_dict`), and nothing here
imports torch, whoosh, sqlite-utils or markdown.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator, Mapping
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

import typer
import typer.main
from typer.core import TyperGroup

from kb import __version__
from kb.errors import KbError

if TYPE_CHECKING:
    from typer._click import Command as ClickCommand
    from typer._click import Context, HelpFormatter

ENV_DEBUG = "KB_DEBUG"


class Command(NamedTuple):
    module: str  # in kb/commands/, with a `register(app)` that adds the command
    help: str  # the line `kb --help` shows


# Every command, in the order `kb --help` shows them.
COMMANDS: dict[str, Command] = {
    "init": Command("init", "Make a knowledge base: kb.toml, entries/ and an ignored .kb/."),
    "record": Command("record", "Record a run as an entry in the knowledge base."),
    "add": Command("add", "Add a reported result (kind report): who published it and where."),
    "ingest": Command("ingest", "Import evidence from other tools' files."),
    "rerun": Command("rerun", "Run a recorded command again, as it was recorded."),
    "show": Command("show", "Show one entry: the answer first, then its evidence."),
    "ls": Command("ls", "List entries, newest first."),
    "search": Command("search", "Search every entry's text, with filters."),
    "board": Command("board", "The scoreboard: one block per workload, one line per backend."),
    "compare": Command("compare", "Compare entries side by side: what differs between them."),
    "trend": Command("trend", "Follow a metric or a timing across releases and dates."),
    "decide": Command("decide", "Record a decision: the question, the choice, the evidence."),
    "release": Command("release", "Record a release of a backend or library (kind release)."),
    "revisit": Command("revisit", "List the decisions that are due, each with its reasons."),
    "expect": Command("expect", "Check the expectations in expectations.toml."),
    "check": Command("check", "Validate every entry and every link."),
    "index": Command("index", "Update the indexes (every query command does this first)."),
    "watch": Command("index", "Watch the entries folder, so commands look only at what changed."),
    "migrate": Command("migrate", "Bring entries written by an older kb to the current format."),
    "site": Command("site", "Build and preview the static site."),
    "export": Command("export", "Export the knowledge base as Parquet files for DuckDB or pandas."),
    "schema": Command("schema", "Print the JSON Schema that entry front matter follows."),
}


@functools.cache
def load(name: str) -> ClickCommand:
    """The command `name`, made from its module alone (the first time it is asked for)."""
    commands = typer.Typer(rich_markup_mode=None)
    import_module(f"kb.commands.{COMMANDS[name].module}").register(commands)
    return typer.main.get_group(commands).commands[name]


class _Loaded(Mapping[str, "ClickCommand"]):
    """The command table as Typer's group reads its commands: a command is loaded when it is looked up."""

    def __getitem__(self, name: str) -> ClickCommand:
        if name not in COMMANDS:
            raise KeyError(name)
        return load(name)

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyCommands(TyperGroup):
    """kb's group of commands: each imported only when it runs or its own help is asked for."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Loaded()  # type: ignore[assignment]

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.help) for name, command in COMMANDS.items()])


app = typer.Typer(
    name="kb",
    cls=LazyCommands,
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


def main(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """Entry point (`args`: the command line after `kb`, else sys.argv's): user errors become one line on stderr and
    exit code 1; tracebacks only with KB_DEBUG=1."""
    try:
        app(args=args, prog_name=prog_name)
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
