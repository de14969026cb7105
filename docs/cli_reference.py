"""Render every command's --help into Markdown for docs/cli.md (run through cog)."""

from __future__ import annotations

from typer.testing import CliRunner

from kb.cli import app

EXIT_CODES = """## Exit codes

| code | when |
|---|---|
| 0 | the command did what it was asked |
| 1 | an error kb explains in one line on stderr (naming the file, field or value, and what to do), or a check \
that found something: `kb check`, `kb expect`, `kb revisit --check`, an import with runs it could not read |
| 2 | a usage error: an unknown command or option, a missing argument, a value of the wrong kind; Click, the \
command-line library under Typer, prints it after the usage line, and 2 is its convention and that of Unix tools |
| the command's own | `kb record -- COMMAND` exits with the command's exit code, 128+N when signal N ended it, \
127 or 126 when it could not be started |
"""


def reference() -> str:
    import typer.main

    runner = CliRunner()
    group = typer.main.get_command(app)
    parts = [
        EXIT_CODES,
        _block("kb --help", runner.invoke(app, ["--help"], prog_name="kb", env={"COLUMNS": "100"}).output),
    ]
    for name, command in group.commands.items():
        # A group (kb site) is documented with each of its commands.
        for words in [[name], *([name, sub] for sub in getattr(command, "commands", {}))]:
            result = runner.invoke(app, [*words, "--help"], prog_name="kb", env={"COLUMNS": "100"})
            title = " ".join(words)
            parts.append(f"## kb {title}\n\n" + _block(f"kb {title} --help", result.output))
    return "\n".join(parts)


def _block(command: str, output: str) -> str:
    return f"```\n$ {command}\n{output.rstrip()}\n```\n"
