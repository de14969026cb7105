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


def _imports_ingest(path: Path) -> list[str]:
    """Each line of `path` that imports ingest/ (at the top or inside a function), as 'path:line'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == "ingest" or name.startswith("ingest.") for name in names):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_kb_core_never_imports_ingest() -> None:
    # The CLI (kb/cli.py and the commands) wires kb and ingest together; nothing else in kb/ knows ingest/.
    wiring = ROOT / "kb" / "commands"
    found = [
        line
        for path in sorted((ROOT / "kb").rglob("*.py"))
        if not path.is_relative_to(wiring) and path != ROOT / "kb" / "cli.py"
        for line in _imports_ingest(path)
    ]
    assert found == [], "kb/ imports ingest/ outside the CLI:\n" + "\n".join(found)


def test_the_layer_check_finds_an_import_of_ingest() -> None:
    assert _imports_ingest(ROOT / "kb" / "commands" / "record.py")  # the CLI's recorder command uses ingest/
