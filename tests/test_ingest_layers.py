"""The recorder's side of ingest/ stands without torch, and ingest/ and ingest/pytorch/ never import each other.

Framework integrations that live in ingest/ (hf, lightning, accelerate) run inside a training process and may
use ingest/pytorch/; no module that ingest/pytorch/ or the recorder reaches may.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

RECORDER = ("finish", "compile_trace", "recorder", "after", "runfolder", "signatures", "environment")


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def test_no_module_the_torch_package_or_the_recorder_reaches_imports_the_torch_package() -> None:
    top = {path.stem: imports(path) for path in (REPO / "ingest").glob("*.py")}
    reached = set(RECORDER)
    for path in (REPO / "ingest" / "pytorch").glob("*.py"):
        reached |= {
            name.split(".")[1] for _, name in imports(path) if name.count(".") >= 1 and name.startswith("ingest.")
        }
    reached &= set(top)
    queue = list(reached)
    while queue:  # everything those modules import from ingest/, in turn
        for _, name in top[queue.pop()]:
            part = name.split(".")[1] if name.startswith("ingest.") else None
            if part in top and part not in reached:
                reached.add(part)
                queue.append(part)
    found = [
        f"{stem}.py:{line} {name}"
        for stem in sorted(reached)
        for line, name in top[stem]
        if name.startswith("ingest.pytorch")
    ]
    assert found == []
