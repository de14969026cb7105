"""`kb` starts a command from a table (name -> module, short help): only the module of the command that runs is
imported, and the table names exactly the commands the modules register."""

from __future__ import annotations

import ast
import subprocess
import sys

import typer
import typer.main
from typer.testing import CliRunner

from kb.cli import COMMANDS, app

LOADED = "sorted(m for m in sys.modules if m.startswith('kb.commands.') or m == 'torch')"


def _modules_loaded_by(*args: str) -> tuple[str, set[str]]:
    """What `kb ARGS` printed, and the command modules (and torch) its process imported."""
    code = (
        f"import atexit, sys; atexit.register(lambda: print({LOADED}, file=sys.stderr)); "
        f"sys.argv = ['kb', *{list(args)!r}]; from kb.launch import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout, set(ast.literal_eval(out.stderr.splitlines()[-1]))


def test_help_lists_every_command_and_imports_none_of_them() -> None:
    shown, loaded = _modules_loaded_by("--help")
    assert loaded <= {"kb.commands.envelope"}, loaded  # neither a command's module nor torch
    for name in COMMANDS:
        assert f"  {name} " in shown, name


def test_a_command_imports_only_its_own_module() -> None:
    shown, loaded = _modules_loaded_by("ls", "--json")
    assert '"command": "ls"' in shown
    commands = {f"kb.commands.{command.module}" for command in COMMANDS.values()}
    assert loaded & commands == {"kb.commands.ls"} and "torch" not in loaded


def test_the_table_names_what_each_module_registers() -> None:
    for module in {command.module for command in COMMANDS.values()}:
        registered = typer.Typer()
        __import__(f"kb.commands.{module}", fromlist=["register"]).register(registered)
        named = {name for name, command in COMMANDS.items() if command.module == module}
        assert set(typer.main.get_group(registered).commands) == named, module


def test_each_short_help_fits_its_line_in_kb_help() -> None:
    shown = CliRunner().invoke(app, ["--help"], prog_name="kb").output
    for name, command in COMMANDS.items():
        assert command.help.endswith(".") and f"{name}" in shown
        assert any(line.split() == [name, *command.help.split()] for line in shown.splitlines()), name


def test_a_misspelt_command_is_refused_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["serch", "x"], prog_name="kb")
    assert result.exit_code == 2 and "No such command 'serch'" in result.output and "'search'" in result.output


def test_the_program_finds_the_command_word_past_the_kb_option() -> None:
    from kb.launch import command_named

    assert command_named(["search", "x"]) == "search"
    assert command_named(["--kb", "search", "ls", "--json"]) == "ls"  # --kb's value is a folder, not a command
    assert command_named(["--kb=/somewhere", "site", "build"]) == "site"
    assert command_named(["--help"]) == "--help"  # not in the table: nothing is loaded ahead
    assert command_named([]) is None
