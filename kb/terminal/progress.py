"""Progress of a long job, on stderr: a bar with an estimate on a terminal, a plain line every few seconds
elsewhere (a pipe, a log, CI), nothing for a job too short to need it."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any, TypeVar

T = TypeVar("T")

PIPE_EVERY_S = 5.0  # between two lines when stderr is not a terminal
MIN_ITEMS = 200  # fewer than this is quick: no progress shown


class Progress:
    """`with Progress("Indexing", total) as step: ... step()` once per item done."""

    def __init__(self, label: str, total: int, unit: str = "entries") -> None:
        self.label, self.total, self.unit = label, total, unit
        self.done = 0
        self.started = self.told = time.monotonic()
        self.shown = total >= MIN_ITEMS
        self._bar: Any = None

    def __enter__(self) -> Progress:
        if self.shown and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn(f"{self.label} {self.total:,} {self.unit}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("about"), TimeRemainingColumn(), console=Console(stderr=True), transient=True,
            )  # fmt: skip
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)
        return self

    def __call__(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            if self.done % 20 == 0 or self.done >= self.total:
                self._bar.update(self._task, completed=self.done)
        elif self.shown and time.monotonic() - self.told >= PIPE_EVERY_S:
            self.told = time.monotonic()
            print(f"kb: {self.line()}", file=sys.stderr, flush=True)

    def line(self) -> str:
        """What a pipe is told: how far, and an estimate of the rest from the rate so far."""
        elapsed = time.monotonic() - self.started
        left = elapsed / self.done * (self.total - self.done) if self.done else None
        estimate = f", about {_seconds(left)} left" if left is not None else ""
        percent = 100 * self.done // max(self.total, 1)
        return f"{self.label.lower()}: {self.done:,} of {self.total:,} {self.unit} ({percent}%){estimate}"

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def counted(items: list[T], label: str, unit: str = "entries") -> Iterator[T]:
    """The items, with progress shown as each is done (stopped when the loop ends, however it ends)."""
    with Progress(label, len(items), unit) as step:
        for item in items:
            yield item
            step()
