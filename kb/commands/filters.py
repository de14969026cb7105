"""The filter options that `kb search` and `kb ls` share, declared once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

if TYPE_CHECKING:
    from kb.index.query import Filters

BACKEND = typer.Option(None, "--backend", help="Only this backend (cuda, rocm, neuron, tpu, xla, mps, cpu, ...).")
WORKLOAD = typer.Option(None, "--workload", help="Only this workload.")
STATUS = typer.Option(None, "--status", help="Only this status (completed, failed, interrupted, killed, running).")
KIND = typer.Option(None, "--kind", help="Only this kind (run, coverage, decision, report, note, release).")
MODE = typer.Option(None, "--mode", help="Only this mode (eager, compiled, ...).")
FAILURE = typer.Option(None, "--failure", help="Only this failure class (oom, compile_timeout, ...).", metavar="CLASS")
TAG = typer.Option([], "--tag", help="Only entries with this tag; repeatable (all must match).")
SINCE = typer.Option(None, "--since", help="Recorded on or after this date (YYYY-MM-DD).", metavar="DATE")
UNTIL = typer.Option(None, "--until", help="Recorded on or before this date (YYYY-MM-DD).", metavar="DATE")
PACKAGE = typer.Option(
    [], "--package", help="A package version range (PEP 440), e.g. 'torch>=2.9'; repeatable.", metavar="SPEC"
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
    )
