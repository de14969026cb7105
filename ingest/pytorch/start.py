"""The instrumented run without a `with` block: `r = start(...)` at the top of a script, `r.finish()` (or nothing).

    import ingest.pytorch

    r = ingest.pytorch.start(workload="word-lm", mode="eager", tokens_per_step=batch * seq)
    for batch in data:
        with r.step():
            loss = step(model, batch)
        r.log("loss", loss)
    r.finish()                         # optional: the end of the process finishes the run too

It is the `with run(...)` form, entered now and left later: `finish()` leaves it as a clean exit; an
exception nobody catches leaves it with that exception (through sys.excepthook, before Python prints
it), SIGTERM too (the run turns it into an exception, as in the `with` form), and the end of the process
leaves it as it stands. The framework callbacks (ingest.frameworks: hf, lightning, accelerate) use it,
with `begin_step`/`end_step` where a framework tells of a step's ends in two calls.
"""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401 registers its exit hook first, so that the run's, registered later, runs before it
import sys
import threading
from types import TracebackType
from typing import Any

from ingest.pytorch.instrument import Run


class StartedRun(Run):
    """A Run entered by start(): finish() ends it once, whichever of the script, an exception or exit comes first."""

    def __init__(self, **options: Any):
        super().__init__(**options)
        self._finished = False
        self._previous_hook: Any = None
        # Said by a framework callback that knows the run cannot have completed, were the process to end now
        # (training began and never reached its end): the run finishes with it at exit.
        self.unfinished: BaseException | None = None

    def begin(self) -> StartedRun:
        self.__enter__()
        self._previous_hook = sys.excepthook
        sys.excepthook = self._uncaught
        # At the end of the process: before the threads' exit hooks, since writing the entry uses a thread pool
        # and concurrent.futures refuses new work once its own hook has run (atexit would be too late). The hook
        # is private to threading: a Python without it gets atexit, where the entry is written without the pool.
        register = getattr(threading, "_register_atexit", None)
        (register if callable(register) else atexit.register)(self._at_exit)
        return self

    def finish(self, exc: BaseException | None = None) -> None:
        """End the run: cleanly, or with the exception that ended it. A second call does nothing."""
        if self._finished:
            return
        self._finished = True
        if sys.excepthook == self._uncaught:
            sys.excepthook = self._previous_hook
        tb = exc.__traceback__ if exc is not None else None
        if self._in_step:  # the exception came inside a step the framework opened and will never close
            self.step.__exit__(type(exc) if exc else None, exc, tb)
        self.__exit__(type(exc) if exc else None, exc, tb)

    def begin_step(self) -> None:
        """A step starts (a framework's on-step-begin hook): the same timer as `with r.step():`."""
        if not self._in_step:
            self.step.__enter__()

    def end_step(self, tokens: int | None = None, samples: int | None = None) -> None:
        """The step started by begin_step ended cleanly."""
        if self._in_step:
            self.step.tokens, self.step.samples = tokens, samples
            self.step.__exit__(None, None, None)

    def abandon_step(self) -> None:
        """Forget the step begin_step started: what followed it was no step (a framework's end after its last one)."""
        self._in_step = False

    def _uncaught(self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        try:
            self.finish(exc)
        finally:
            (self._previous_hook or sys.__excepthook__)(kind, exc, tb)

    def _at_exit(self) -> None:
        self.finish(self.unfinished)


def start(**options: Any) -> StartedRun:
    """Start an instrumented run now; it ends at `finish()`, an uncaught exception, SIGTERM or the process's end.
    Takes the options of `run(...)`."""
    return StartedRun(**options).begin()
