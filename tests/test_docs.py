"""Docs that cannot drift: the command reference is generated from the code, and every command is documented."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_command_reference_matches_the_code() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cogapp", "-I", "docs", "--check", "docs/cli.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, "docs/cli.md is stale: run `cog -I docs -r docs/cli.md`\n" + result.stderr


def test_every_command_appears_in_the_readme_or_docs() -> None:
    import typer.main

    from kb.cli import app

    text = (REPO / "README.md").read_text() + "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    for name in typer.main.get_command(app).commands:
        assert f"kb {name}" in text, name
