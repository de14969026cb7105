"""The `kb` program's entry point: a Ctrl-C during start-up is held until kb can act on it.

Importing the command line (Typer, Rich, the command that runs) is most of kb's start-up, and a KeyboardInterrupt
raised inside an import can be printed and dropped by Python ("Exception ignored in ... _get_module_lock"):
kb would then go on as if nothing was sent. So until the command line and the command's module are loaded, the
signal is only noted.

Python's cyclic garbage collector is paused while they load: what they make are modules, classes and functions
that live until kb exits, and each collection would walk all of them again, more often as more are made. They are
then frozen out of later collections, and the collector resumes for the command's work.
"""

from __future__ import annotations

import gc
import signal
import sys


def command_named(args: list[str]) -> str | None:
    """The word in the command's place in `kb [--kb PATH] COMMAND ...` (None if there is none)."""
    rest = iter(args)
    for arg in rest:
        if arg == "--kb":
            next(rest, None)
        elif not arg.startswith("--kb="):
            return arg
    return None


def main() -> None:
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    gc.disable()
    from kb.cli import COMMANDS, load
    from kb.cli import main as run

    if (name := command_named(sys.argv[1:])) in COMMANDS:
        load(name)  # the table loads it again from its cache: its imports happen while the signal is held
    gc.freeze()
    gc.enable()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if noted:
        print("kb: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
