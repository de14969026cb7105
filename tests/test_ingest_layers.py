"""The recorder's side of ingest/ stands without torch: no module of ingest/ imports ingest/pytorch/."""

from __future__ import annotations

import ast

from conftest import REPO


def test_no_module_of_ingest_imports_the_torch_package() -> None:
    found = []
    for path in sorted((REPO / "ingest").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            found += [f"{path.name}:{node.lineno} {name}" for name in names if name.startswith("ingest.pytorch")]
    assert found == []
