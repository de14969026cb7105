"""Render every command's --help into Markdown for docs/cli.md (run through cog)."""

from __future__ import annotations

from typer.testing import CliRunner

from kb.cli import app


def reference() -> str:
    import typer.main

    runner = CliRunner()
    group = typer.main.get_command(app)
    parts = [_block("kb --help", runner.invoke(app, ["--help"], prog_name="kb", env={"COLUMNS": "100"}).output)]
    for name, command in group.commands.items():
        # A group (kb site) is documented with each of its commands.
        for words in [[name], *([name, sub] for sub in getattr(command, "commands", {}))]:
            result = runner.invoke(app, [*words, "--help"], prog_name="kb", env={"COLUMNS": "100"})
            title = " ".join(words)
            parts.append(f"## kb {title}\n\n" + _block(f"kb {title} --help", result.output))
    return "\n".join(parts)


def _block(command: str, output: str) -> str:
    return f"```\n$ {command}\n{output.rstrip()}\n```\n"
