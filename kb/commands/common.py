"""What every command shares: finding the knowledge base from the global options, printing JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from kb.store import KnowledgeBase


def knowledge_base(ctx: typer.Context) -> KnowledgeBase:
    return KnowledgeBase.find((ctx.find_root().obj or {}).get("kb"))


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
