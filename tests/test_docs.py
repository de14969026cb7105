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


def test_exit_codes_are_those_the_reference_gives() -> None:
    from conftest import run_kb

    reference = (REPO / "docs" / "cli.md").read_text()
    usage = run_kb("ls", "--no-such-option")
    assert usage.returncode == 2 and "No such option: --no-such-option" in usage.stderr
    assert "| 2 | a usage error: an unknown command or option," in reference
    error = run_kb("show", "no-such-entry")
    assert error.returncode == 1 and error.stderr.startswith("kb: error: ")
    assert "| 1 | an error kb explains in one line on stderr" in reference
