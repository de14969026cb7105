"""The frameworks kb meets (transformers, lightning, accelerate, mlflow, tensorboard) load only where used."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("transformers", "lightning", "pytorch_lightning", "accelerate", "mlflow", "tensorboard")
CHECK = f"import sys; {{}}; print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))"


@pytest.mark.parametrize(
    "code",
    [
        "import ingest.pytorch; ingest.pytorch.start",
        "from ingest.pytorch import run; run",
        "import ingest.frameworks.integration, ingest.frameworks.pytest_plugin, ingest.importers.batch_import",
        "from kb.cli import app",
    ],
)
def test_importing_kb_and_its_instrumentation_imports_no_framework(code: str) -> None:
    out = subprocess.run([sys.executable, "-c", CHECK.format(code)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_kb_help_imports_no_framework() -> None:
    code = "import sys, runpy; sys.argv = ['kb', '--help']\ntry:\n    runpy.run_module('kb', run_name='__main__')\n"
    code += (
        f"except SystemExit:\n    pass\nprint(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "ingest" in out.stdout  # the help was printed
    assert out.stderr.strip().splitlines()[-1] == "[]"
