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
# A WHERE fragment handed to the index ("e.workload IS ? AND e.mode IS ?") is SQL too: a column compared to a
# placeholder.
FRAGMENT = re.compile(r"\b[a-z_][\w.]*\s+(?:=|<>|!=|<=|>=|<|>|IS(?:\s+NOT)?|LIKE|IN)\s+\(?\?(?=\s|\)|,|$)")
CURSOR_CALLS = {"execute", "executemany", "executescript"}


def _sql_in(path: Path) -> list[str]:
    """Each line of `path` that runs SQL or holds a statement, as 'path:line'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CURSOR_CALLS
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
        written = SQL.match(text) or FRAGMENT.search(text)
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


def test_the_check_finds_a_where_fragment() -> None:
    for fragment in ("e.workload IS ? AND e.backend IS ? AND e.mode IS ?", "e.workload = ? AND (", "id IN (?)"):
        assert FRAGMENT.search(fragment), fragment
    for prose in ("how much faster?", "(?:=(?!=)|:(?!:))", "a value IS NOT NULL"):
        assert not FRAGMENT.search(prose), prose


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


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `path` imports, at its top or inside its functions (an import put off into a
    function to get round a circle is still one), but not under `if TYPE_CHECKING:` (never run)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}".rstrip(".")
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            else:
                visit([child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)])
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(ast.parse(path.read_text("utf-8"), str(path)).body)
    return {name for name in found if name in known and name != module}


def import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    paths = [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]
    known = {_module_of(path) for path in paths}
    return {_module_of(path): _imports(path, known) for path in paths}


def import_circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports in the graph (its modules, the first again at the end), or [] when there is none."""
    from graphlib import CycleError, TopologicalSorter

    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))
    return []


def test_no_import_circles() -> None:
    circle = import_circle(import_graph(("kb", "ingest", "bench")))
    assert circle == [], "modules that import each other as they load: " + " -> ".join(circle)


def test_the_import_check_finds_a_circle_and_reads_imports_as_python_does() -> None:
    circle = import_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert len(circle) == 4 and circle[0] == circle[-1] and set(circle) == {"a", "b", "c"}
    assert import_circle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) == []
    graph = import_graph(("kb",))
    assert "kb.index.db" in graph["kb.index.query"]  # from kb.index.db import reading
    assert "kb.index.fulltext" in graph["kb.index.query"]  # from kb.index import fulltext
    assert "kb.cli" in graph["kb.launch"]  # imported inside main()
    assert "kb.cli" not in graph["kb.commands.search"]


def test_test_helpers_are_imported_one_way() -> None:
    # pytest loads tests/conftest.py as the module `conftest`: `tests.conftest` would be a second copy of it.
    twice = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "tests").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."))
        or (isinstance(node, ast.Import) and any(alias.name.startswith("tests.") for alias in node.names))
    ]
    assert twice == [], "import test helpers as `from conftest import ...`, never through `tests.`"


def test_the_tiers_name_test_files_that_exist_and_markers_pytest_knows() -> None:
    from conftest import TIERS

    assert [name for name in TIERS if not (ROOT / "tests" / name).exists()] == []
    declared = (ROOT / "pyproject.toml").read_text()
    assert all(f'"{marker}: ' in declared for markers in TIERS.values() for marker in markers)


def test_kb_keeps_its_modules_in_rooms() -> None:
    # The flow capture -> entry -> files -> index -> answers -> views: kb/'s top holds only how the program starts
    # and the errors every room raises; everything else lives in its room (README, Layout).
    loose = sorted(path.name for path in (ROOT / "kb").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "cli.py", "errors.py", "launch.py"]
