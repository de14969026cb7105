"""Render every command's --help into Markdown for docs/cli.md (run through cog)."""

from __future__ import annotations

from typer.testing import CliRunner

from kb.cli import app


def reference() -> str:
    import typer.main

    runner = CliRunner()
    group = typer.main.get_command(app)
    parts = [_block("kb --help", runner.invoke(app, ["--help"], prog_name="kb", env={"COLUMNS": "100"}).output)]
    for name in group.commands:
        result = runner.invoke(app, [name, "--help"], prog_name="kb", env={"COLUMNS": "100"})
        parts.append(f"## kb {name}\n\n" + _block(f"kb {name} --help", result.output))
    return "\n".join(parts)


def _block(command: str, output: str) -> str:
    return f"```\n$ {command}\n{output.rstrip()}\n```\n"
