"""Every `--json` prints one envelope, `{"kb": 1, "command": ..., "data": ...}`: each command that takes --json is
run here (or named with the test that runs it), and its output must be that envelope naming the command."""

from __future__ import annotations

import sys

import pytest
from conftest import json_data, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase

JUNIT = '<testsuites><testsuite name="ops" tests="1"><testcase classname="t" name="add"/></testsuite></testsuites>'

# command -> its arguments before --json ("{a}" and "{b}" are two runs' ids)
EXAMPLES = {
    "ls": ["ls"],
    "search": ["search", "tiny"],
    "show": ["show", "{a}"],
    "board": ["board"],
    "compare": ["compare", "{a}", "{b}"],
    "trend": ["trend", "tokens_per_s", "--workload", "tiny-lm"],
    "check": ["check"],
    "revisit": ["revisit"],
    "expect": ["expect"],
    "release": ["release", "torch", "2.13.0", "--date", "2026-11-01"],
    "decide": ["decide", "--title", "t", "--question", "q", "--choice", "c", "--evidence", "{a}"],
    "add": [
        "add",
        "--title",
        "vendor figure",
        "--publisher",
        "a vendor",
        "--date",
        "2026-10-01",
        "--measured",
        "tokens/s of tiny-lm",
        "--workload",
        "tiny-lm",
        "--backend",
        "neuron",
        "--metric",
        "tokens_per_s=900",
    ],
    "record": ["record", "--", sys.executable, "-c", "pass"],
    "ingest junit": ["ingest", "junit", "{junit}", "--backend", "cpu"],
}
# The other importers print what `ingest junit` prints, through the same function; their tests read it.
ELSEWHERE = {
    "ingest mlflow": "test_ingest_stores.py",
    "ingest tensorboard": "test_ingest_stores.py",
    "ingest profile": "test_ingest_profile.py",
    "ingest compile-trace": "test_ingest_compile_trace.py",
    "export": "test_export.py",
    "rerun": "test_rerun_json.py",
}


def _commands_with_json() -> set[str]:
    import typer.main

    from kb.cli import app

    found: set[str] = set()

    def walk(command, path: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))
        if any("--json" in getattr(param, "opts", ()) for param in command.params):
            found.add(" ".join(path))

    walk(typer.main.get_command(app), ())
    return found


def test_every_command_with_json_is_checked_here_or_named() -> None:
    assert _commands_with_json() == set(EXAMPLES) | set(ELSEWHERE)


@pytest.fixture
def runs(kb: KnowledgeBase, tmp_path) -> dict[str, str]:
    for n, rate in ((1, 100.0), (2, 120.0)):
        write_entry(kb, f"2026-11-0{n}-tiny-lm-00000{n}", recorded=f"2026-11-0{n}T00:00:00Z", status="completed",
                    workload={"name": "tiny-lm"}, backend="cpu", mode="eager",
                    metrics={"tokens_per_s": {"value": rate, "unit": "tokens/s"}})  # fmt: skip
    (kb.root / "expectations.toml").write_text(
        '[[expect]]\nworkload = "tiny-lm"\nbackend = "cpu"\nfigure = "tokens_per_s"\nmin = 50\n'
    )
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    return {"a": "2026-11-01-tiny-lm-000001", "b": "2026-11-02-tiny-lm-000002", "junit": str(junit)}


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_each_json_prints_the_envelope_naming_its_command(runs: dict[str, str], command: str) -> None:
    args = [arg.format(**runs) for arg in EXAMPLES[command]]
    at = args.index("--") if "--" in args else len(args)
    result = run_kb(*args[:at], "--json", *args[at:])
    assert result.returncode == 0, result.stderr
    data = json_data(result.stdout, command=command)
    assert data is not None
