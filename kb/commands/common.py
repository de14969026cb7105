"""What the commands share: the knowledge base from the global options, up-to-date indexes, output helpers."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

import typer

from kb.errors import Problem
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path


def settle_orphan(kb: KnowledgeBase, entry: Entry) -> Entry:
    """How the commands close a dead recorder's entry as killed: the CLI is where kb and ingest meet, and every reader
    settles dead recorders' runs (kb.index.prepare, kb.store.orphans)."""
    from ingest.killed import settle  # closing an entry takes the recorder's code, which few commands reach

    return settle(kb, entry)


def waiting_note(lock: Path) -> None:
    """What a command says when its sync has waited a while for another kb process's lock on the index."""
    typer.echo(f"kb: waiting for another kb process that is updating the index ({lock})", err=True)


def knowledge_base(ctx: typer.Context) -> KnowledgeBase:
    return KnowledgeBase.find((ctx.find_root().obj or {}).get("kb"))


def synced(ctx: typer.Context) -> tuple[KnowledgeBase, sqlite3.Connection]:
    """The knowledge base prepared for reading (kb.index.prepare), and the index."""
    from kb.index.db import connect, connect_read_only, index_path
    from kb.index.prepare import prepare
    from kb.terminal.progress import counted

    kb = knowledge_base(ctx)
    report = prepare(kb, settle=settle_orphan, stale_ok=True, waiting=waiting_note, progress=counted)
    if report.repaired:
        typer.echo(f"kb: the index was damaged ({report.repaired}); rebuilt it from the entries", err=True)
    if report.stale:
        typer.echo(f"kb: warning: {report.stale}; answering from the index as it was: it may be stale", err=True)
    if kb.cache_borrowed:
        typer.echo(f"kb: {kb.root} has no .kb folder and cannot be written: indexed in {kb.cache_path}", err=True)
    return kb, (connect_read_only if report.stale else connect)(index_path(kb.cache_path))


def report_problems(problems: Iterable[Problem]) -> None:
    for problem in problems:
        typer.echo(f"kb: skipped {problem}", err=True)


def ask_missing(needed: dict[str, tuple[str | None, str]], what: str) -> dict[str, str]:
    """Required options, `--flag: (value, prompt)`: in a terminal kb asks for each one left out; in a
    script it names them all in one error. Returns flag -> value."""
    from kb.errors import KbError

    values = {flag: value for flag, (value, _) in needed.items()}
    if sys.stdin.isatty():
        values = {flag: value or typer.prompt(needed[flag][1]) for flag, value in values.items()}
    missing = [flag for flag, value in values.items() if not value]
    if missing:
        raise KbError(f"{what} needs {', '.join(missing)}: give them as options (in a terminal, kb asks for them)")
    return values  # type: ignore[return-value]
