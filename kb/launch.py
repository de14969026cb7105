"""The `kb` program's entry point: a Ctrl-C during start-up is held until kb can act on it.

Importing the command line (Typer, Rich, the commands) is most of kb's start-up, and a KeyboardInterrupt
raised inside an import can be printed and dropped by Python ("Exception ignored in ... _get_module_lock"):
kb would then go on as if nothing was sent. So until the command line is loaded, the signal is only noted.
"""

from __future__ import annotations

import signal
import sys


def main() -> None:
    noted: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    from kb.cli import main as run

    signal.signal(signal.SIGINT, signal.default_int_handler)
    if noted:
        print("kb: interrupted", file=sys.stderr)
        sys.exit(130)
    run()
