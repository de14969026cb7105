"""Docs that cannot drift: the command reference is generated from the code, and every command has its own help
and is written about in the hand-written docs (not only in the generated reference, docs/cli.md)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

GENERATED = {REPO / "docs" / "cli.md"}


def hand_written() -> list[Path]:
    return [REPO / "README.md", *(path for path in sorted((REPO / "docs").glob("*.md")) if path not in GENERATED)]


def commands() -> Iterator[tuple[str, object]]:
    """Every command and subcommand as typed after `kb` (`site build`), with its Click command."""
    import typer.main

    from kb.cli import app

    def walk(group: object, path: tuple[str, ...]) -> Iterator[tuple[str, object]]:
        for name, command in getattr(group, "commands", {}).items():
            yield " ".join((*path, name)), command
            yield from walk(command, (*path, name))

    yield from walk(typer.main.get_command(app), ())


def test_command_reference_matches_the_code() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cogapp", "-I", "docs", "--check", "docs/cli.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, "docs/cli.md is stale: run `cog -I docs -r docs/cli.md`\n" + result.stderr


def test_every_command_has_help_and_a_hand_written_doc() -> None:
    text = "".join(path.read_text() for path in hand_written())
    undocumented = [name for name, _ in commands() if f"kb {name}" not in text]
    helpless = [name for name, command in commands() if not (getattr(command, "help", None) or "").strip()]
    assert undocumented == [], "commands no hand-written doc names (README.md, docs/*.md but cli.md)"
    assert helpless == [], "commands without help"


def test_the_generated_reference_is_not_read_as_a_hand_written_doc() -> None:
    assert GENERATED.isdisjoint(hand_written()) and all(path.exists() for path in GENERATED)


def test_exit_codes_are_those_the_reference_gives() -> None:
    from conftest import run_kb

    reference = (REPO / "docs" / "cli.md").read_text()
    usage = run_kb("ls", "--no-such-option")
    assert usage.returncode == 2 and "No such option: --no-such-option" in usage.stderr
    assert "| 2 | a usage error: an unknown command or option," in reference
    error = run_kb("show", "no-such-entry")
    assert error.returncode == 1 and error.stderr.startswith("kb: error: ")
    assert "| 1 | an error kb explains in one line on stderr" in reference
