"""The last exception each failing process printed, read from a run's captured output.

A command that was not instrumented leaves its cause only in its output, and under torchrun that output
ends in the launcher's own boilerplate (`ChildFailedError`, a table of ranks and exit codes), so neither
the output's tail nor "exit code 1" says what went wrong. Python prints each uncaught exception as
"Traceback (most recent call last):", indented frames, then one unindented line, the exception itself;
torchrun prefixes each line of rank N's output with "[rankN]: ". That unindented line is what is kept, per
rank (None for output without a rank prefix, such as the launcher's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MESSAGE_MAX = 500
_RANK_PREFIX = re.compile(r"^\[(?:default)?rank(\d+)\]:\s?")
_TRACEBACK = "Traceback (most recent call last):"
# The exception line: a (dotted) name, then ": message" or nothing.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?::\s.*|:)?$")


@dataclass(frozen=True)
class Raised:
    rank: int | None
    line: int  # 1-based, in the output
    text: str  # "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'"


def last_exceptions(path: Path) -> list[Raised]:
    """The last exception of each process (rank) in the output, ranks in order, unranked output last."""
    inside: dict[int | None, bool] = {}
    found: dict[int | None, Raised] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            prefix = _RANK_PREFIX.match(line)
            rank = int(prefix.group(1)) if prefix else None
            text = line[prefix.end() :] if prefix else line
            if text.startswith(_TRACEBACK):
                inside[rank] = True
            elif inside.get(rank) and text and not text[0].isspace():
                inside[rank] = False
                if _EXCEPTION.match(text.strip()):
                    found[rank] = Raised(rank, number, text.strip()[:MESSAGE_MAX])
    return sorted(found.values(), key=lambda raised: (raised.rank is None, raised.rank or 0))


def failure_message(raised: list[Raised]) -> str | None:
    """One message for the failure: the ranks' own exceptions (the launcher's only when no rank printed one)."""
    ranked = [item for item in raised if item.rank is not None] or raised
    if not ranked:
        return None
    texts = list(dict.fromkeys(item.text for item in ranked))
    if len(texts) == 1:
        ranks = [str(item.rank) for item in ranked if item.rank is not None]
        where = f" (rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)})" if ranks else ""
        return f"{texts[0]}{where}"[:MESSAGE_MAX]
    return "; ".join(f"rank {item.rank}: {item.text}" for item in ranked)[:MESSAGE_MAX]
