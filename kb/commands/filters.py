"""The filter options that `kb search` and `kb ls` share, declared once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

from kb.model.taxonomy import FAILURE_CLASSES, KINDS, STATUSES

if TYPE_CHECKING:
    import sqlite3

    from kb.index.query import Filters

LISTED = 20  # known values named in an error; a knowledge base can hold hundreds of workloads
BACKEND = typer.Option(None, "--backend", help="Only this backend (cuda, rocm, neuron, tpu, xla, mps, cpu, ...).")
WORKLOAD = typer.Option(None, "--workload", help="Only this workload.")
STATUS = typer.Option(
    None, "--status", help=f"Only this status ({', '.join(STATUSES)}).", autocompletion=lambda: list(STATUSES)
)
KIND = typer.Option(None, "--kind", help=f"Only this kind ({', '.join(KINDS)}).", autocompletion=lambda: list(KINDS))
MODE = typer.Option(None, "--mode", help="Only this mode (eager, compiled, ...).")
FAILURE = typer.Option(
    None, "--failure", help="Only this failure class (oom, compile_timeout, ...).", metavar="CLASS",
    autocompletion=lambda: list(FAILURE_CLASSES),
)  # fmt: skip
TAG = typer.Option([], "--tag", help="Only entries with this tag; repeatable (all must match).")
SINCE = typer.Option(None, "--since", help="Recorded on or after this date (YYYY-MM-DD).", metavar="DATE")
UNTIL = typer.Option(None, "--until", help="Recorded on or before this date (YYYY-MM-DD).", metavar="DATE")
PACKAGE = typer.Option(
    [], "--package", help="A package version range (PEP 440), e.g. 'torch>=2.9'; repeatable.", metavar="SPEC"
)
SETTING = typer.Option(
    [],
    "--setting",
    help="Only entries with this setting, e.g. batch=8; repeatable (all must match).",
    metavar="NAME=VALUE",
)


def build(
    backend: Optional[str],
    workload: Optional[str],
    status: Optional[str],
    kind: Optional[str],
    mode: Optional[str],
    failure: Optional[str],
    tag: list[str],
    since: Optional[str],
    until: Optional[str],
    package: list[str],
    setting: list[str] | None = None,
) -> Filters:
    from kb.index.query import Filters

    return Filters(
        backend=backend,
        workload=workload,
        status=status,
        kind=kind,
        mode=mode,
        failure=failure,
        tags=list(tag),
        since=since,
        until=until,
        packages=list(package),
        settings=list(setting or []),
    )


def check_choice(option: str, value: str | None, choices: tuple[str, ...] | list[str], known: str = "one of") -> None:
    """A value outside `choices` is an error naming them, with the nearest as a suggestion."""
    if value is None or value in choices:
        return
    import difflib

    from kb.errors import KbError, quoted

    near = difflib.get_close_matches(value, list(choices), n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    shown = list(choices)[:LISTED]
    listed = ", ".join(shown) + (f" and {len(choices) - LISTED} more" if len(choices) > LISTED else "") or "none yet"
    raise KbError(f"{option} {quoted(value)} is not {known}: {listed}{hint}")


def check_known(chosen: Filters, db: sqlite3.Connection) -> None:
    """Status, kind and failure class are checked against kb's lists; backend, workload and mode against
    the values entries have, so that a typo answers with what is there instead of "No entries match."."""
    from kb.index.values import recorded_values

    check_choice("--status", chosen.status or None, STATUSES)
    check_choice("--kind", chosen.kind or None, KINDS)
    check_choice("--failure", chosen.failure or None, FAILURE_CLASSES)
    for option, column in (("--backend", "backend"), ("--workload", "workload"), ("--mode", "mode")):
        value = getattr(chosen, column) or None
        if value is not None:
            check_choice(option, value, recorded_values(db, column), known="recorded by any entry; recorded")
