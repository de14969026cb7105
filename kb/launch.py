"""The `kb` program's entry point: a Ctrl-C during start-up is held until kb can act on it.

Importing the command line (Typer, Rich, the commands) is most of kb's start-up, and a KeyboardInterrupt
raised inside an import can be printed and dropped by Python ("Exception ignored in ... _get_module_lock"):
kb would then go on as if nothing was sent. So until the command line is loaded, the signal is only noted.

A process runs one command, so the program registers only that one with Typer (`asked_command`): Typer reads
every registered command's options at each start, about a third of what a short command like `kb search` costs.
While `kb watch` runs, its fork server runs the commands that only read (kb/forkserver.py), without any of that.
"""

from __future__ import annotations

import signal
import sys

_program: list[bool] = []  # holds True once main() runs: this process is the `kb` program


def asked_command(commands: tuple[str, ...]) -> str | None:
    """In the `kb` program, the command its command line runs, if one of `commands`; else None (register all)."""
    return command_of(sys.argv[1:], commands) if _program else None


def command_of(args: list[str], commands: tuple[str, ...]) -> str | None:
    """The command in `kb [--kb PATH] COMMAND ...`, if it is one of `commands`; None for anything else
    (`kb --help`, `kb --version`, a misspelt command: Typer answers those with every command registered)."""
    found = split(args)[1]
    return found if found in commands else None


def split(args: list[str]) -> tuple[str | None, str | None]:
    """The `--kb` value and the command of `kb [--kb PATH] COMMAND ...` (None for either not given)."""
    explicit = None
    rest = iter(args)
    for arg in rest:
        if arg == "--kb":
            explicit = next(rest, None)
        elif arg.startswith("--kb="):
            explicit = arg.removeprefix("--kb=")
        else:
            return explicit, arg
    return explicit, None


def main() -> None:
    _program.append(True)
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    from kb.forkserver import answer

    served = answer(sys.argv[1:], noted)  # by kb watch's fork server, which has all this loaded (kb/forkserver.py)
    if served is not None:
        sys.exit(served)
    from kb.cli import main as run

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if noted:
        print("kb: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
