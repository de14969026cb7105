"""What the commands share: the knowledge base from the global options, up-to-date indexes, output helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import typer

from kb.errors import Problem
from kb.store import KnowledgeBase

if TYPE_CHECKING:
    import sqlite3


def knowledge_base(ctx: typer.Context) -> KnowledgeBase:
    return KnowledgeBase.find((ctx.find_root().obj or {}).get("kb"))


def synced(ctx: typer.Context) -> tuple[KnowledgeBase, sqlite3.Connection]:
    """The knowledge base with its indexes brought up to date (and dead recordings settled), and the index."""
    from ingest.orphans import settle_indexed
    from kb.index.db import connect, index_path
    from kb.index.sync import sync

    kb = knowledge_base(ctx)
    sync(kb)
    if settle_indexed(kb):
        sync(kb)
    return kb, connect(index_path(kb.cache_path))


def report_problems(problems: Iterable[Problem]) -> None:
    for problem in problems:
        typer.echo(f"kb: skipped {problem}", err=True)


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
