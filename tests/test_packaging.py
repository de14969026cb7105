"""What `pip install kb` gets: a wheel built from this tree holds every module and data file kb and ingest need."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_wheel_holds_every_module_and_data_file(tmp_path: Path) -> None:
    # setuptools builds in build/ beside the sources and never empties it: a module moved away would stay packed.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(tmp_path),
         str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = tmp_path.glob("kb-*.whl")
    packed = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        path.relative_to(ROOT).as_posix()
        for package in ("kb", "ingest")
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert sorted(wanted - packed) == []
    assert sorted(name for name in packed - wanted if name.startswith(("kb/", "ingest/"))) == []  # nothing stale
