"""What the framework integrations (ingest.frameworks: hf, lightning, accelerate) share.

A framework calls kb's hooks from inside its training loop, so a defect in kb must never reach that
loop: `guarded` turns an exception in a hook into a note in the entry (which hook, what it raised) and
lets training go on. Framework names of metrics ("train/loss", "eval_loss") become entry metric names.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

Hook = TypeVar("Hook", bound=Callable[..., Any])
METRIC_NAME_MAX = 64
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_:+-]+")  # what an entry's metric name may not hold (see the schema)


class TrainingStopped(Exception):
    """Training began and the process ended before the framework said it ended (its error was caught and kept)."""


class Guarded:
    """Owner of hooks wrapped by `guarded`: keeps what went wrong until the run can note it."""

    run: Any = None  # the StartedRun, once training began

    def __init__(self) -> None:
        self.problems: dict[str, str] = {}  # per hook, the first error

    def trouble(self, hook: str, problem: BaseException) -> None:
        if hook in self.problems:
            return
        text = f"kb's {hook} hook failed ({type(problem).__name__}: {problem}); training went on without it"
        self.problems[hook] = text
        print(f"kb: {text}", file=sys.stderr)
        if self.run is not None:
            self.run.note(text)

    def noted_so_far(self) -> None:
        """Put the errors of hooks that ran before the run existed into it."""
        for text in self.problems.values():
            self.run.note(text)


def guarded(hook: Hook) -> Hook:
    """A hook of a Guarded object that never raises into the framework (an error is noted, None returned)."""

    @functools.wraps(hook)
    def safe(self: Guarded, *args: Any, **kwargs: Any) -> Any:
        try:
            return hook(self, *args, **kwargs)
        except Exception as problem:
            self.trouble(hook.__name__, problem)
            return None

    return safe  # type: ignore[return-value]


def metric_name(name: str) -> str:
    """A framework's metric name as an entry metric name: "train/loss" -> "train:loss"."""
    cleaned = _NOT_IN_NAME.sub("_", name.replace("/", ":").replace(".", "_")).lstrip(":+-") or "metric"
    return cleaned[:METRIC_NAME_MAX]


def metric_names(names: Iterable[str]) -> dict[str, str]:
    """Per logged name, its entry metric name (see metric_name), distinct for every name: a name that is one already
    keeps it, and one that would take a name already taken ("train/loss" beside "train:loss") gets a number."""
    found: dict[str, str] = {}
    taken: set[str] = set()
    for name in sorted(names, key=lambda name: (metric_name(name) != name, name)):
        kept = base = metric_name(name)
        number = 1
        while kept in taken:
            number += 1
            kept = f"{base[: METRIC_NAME_MAX - len(str(number)) - 1]}-{number}"
        taken.add(kept)
        found[name] = kept
    return found


def curve_file(entry_name: str) -> str:
    """The file a metric's whole curve goes to: one folder level, no colon (which some systems and URLs refuse)."""
    return f"metric-{entry_name.replace(':', '.')}.txt"


def loggable(value: Any) -> Any:
    """A logged value the run can keep: a finite number, or a one-element tensor (read back when the run ends,
    never inside a hook, which would wait for the device); None for anything else (text, images, NaN)."""
    if isinstance(value, bool):
        return None
    if hasattr(value, "numel") and hasattr(value, "detach"):
        return value.detach().reshape(()) if value.numel() == 1 else None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None
