"""SQL lives in kb/index/ only: everything else asks the index through named functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kb", "ingest")
# Statements as kb writes them (keywords in capitals), not English that starts with "With" or "Update".
SQL = re.compile(
    r"^\s*(SELECT\s.*\bFROM\b|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s"
    r"|(CREATE|DROP)\s+(VIRTUAL\s+)?(TABLE|INDEX|VIEW|TRIGGER)\s|PRAGMA\s+\w|WITH\s+\w+\s+AS\s*\()",
    re.DOTALL,
)
CURSOR_CALLS = {"execute", "executemany", "executescript"}


def _sql_in(path: Path) -> list[str]:
    """Each line of `path` that runs SQL or holds a statement, as 'path:line'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CURSOR_CALLS
        written = isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value)
        if called or written:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_sql_outside_the_index() -> None:
    outside = [
        line
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if not path.is_relative_to(ROOT / "kb" / "index")
        for line in _sql_in(path)
    ]
    assert outside == [], "SQL outside kb/index/ (ask the index through a function there):\n" + "\n".join(outside)


def test_the_check_finds_sql() -> None:
    sample = ROOT / "kb" / "index" / "site.py"  # the index's own questions: SQL it must recognise
    assert _sql_in(sample)
