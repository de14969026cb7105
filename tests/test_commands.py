"""`kb init`, `kb show`, `kb ls`, `kb schema`, finding the knowledge base, and a start-up free of heavy imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import KB_COMMAND, json_data, run_kb

from kb.store.knowledge_base import KnowledgeBase

DATA = Path(__file__).parent / "data" / "entries"


def test_init_makes_a_knowledge_base_once(tmp_path: Path) -> None:
    target = tmp_path / "team-kb"
    first = run_kb("init", str(target))
    assert first.returncode == 0
    assert first.stdout.startswith(f"Knowledge base ready at {target}\n")
    assert (target / "kb.toml").is_file() and (target / "entries").is_dir()
    assert (target / ".kb" / ".gitignore").read_text() == "# derived data, rebuilt by kb\n*\n"
    again = run_kb("init", str(target))
    assert again.stdout == f"Knowledge base already complete at {target}; nothing changed\n"


def test_the_knowledge_base_is_found_upward_from_the_working_folder(kb: KnowledgeBase) -> None:
    inner = kb.root / "entries" / "2026"
    inner.mkdir()
    found = run_kb("ls", "--json", env={"KB_HOME": ""}, cwd=inner)
    assert found.returncode == 0 and json_data(found.stdout) == []
    named = run_kb("--kb", str(kb.root), "ls", "--json", env={"KB_HOME": ""}, cwd=Path("/"))
    assert named.returncode == 0
    wrong = run_kb("--kb", str(kb.root / "entries"), "ls", env={"KB_HOME": ""})
    assert wrong.stderr == (
        f"kb: error: {kb.root / 'entries'} is not a knowledge base (no kb.toml); "
        f"run 'kb init {kb.root / 'entries'}' or fix --kb\n"
    )


def copy_samples(kb: KnowledgeBase) -> None:
    for path in [*sorted((DATA / "good").glob("*.md")), DATA / "bad" / "bad-kind.md"]:
        shutil.copy(path, kb.entries_path / path.name)


def test_ls_lists_newest_first_and_reports_broken_files_without_stopping(kb: KnowledgeBase) -> None:
    copy_samples(kb)
    result = run_kb("ls", "--json")
    assert result.returncode == 0
    assert [row["id"] for row in json_data(result.stdout)] == [
        "2026-11-30-tiny-lm-eager-0a1b2c",
        "2026-10-23-qwen3-32b-trn2-compiled-5e1c0a",
    ]
    broken = kb.entries_path / "bad-kind.md"
    assert result.stderr == (
        f"kb: skipped {broken}:5: kind: 'experiment' is not one of: run, coverage, decision, report, note, release\n"
    )
    table = run_kb("ls", "--kind", "report")
    assert "2026-10-23-qwen3-32b-trn2-compiled-5e1c0a" in table.stdout and "tiny-lm" not in table.stdout
    assert run_kb("ls", "--status", "running").stdout == "No entries match.\n"


def test_show_prints_an_entry_for_people_and_for_scripts(kb: KnowledgeBase) -> None:
    copy_samples(kb)
    shown = run_kb("show", "2026-10-23-qwen3")  # a unique start of an id is enough
    assert shown.returncode == 0, shown.stderr
    for text in (
        "Qwen3-32B training on 16 Trainium2 chips, compiled",
        "throughput  14,156 tokens/s",
        "https://example.invalid/trainium-evaluation",
        "torch-neuronx",
        "2.13.3.0",
        "SemiAnalysis",
        "the eager run reached 11,099 tokens/s",
    ):
        assert text in shown.stdout
    assert "tokens_per_s" in run_kb("show", "5e1c0a", "--all").stdout  # the random suffix is enough too
    as_json = json_data(run_kb("show", "2026-10-23-qwen3-32b-trn2-compiled-5e1c0a", "--json").stdout)
    assert as_json["front_matter"]["versions"]["torch"] == "2.10"
    assert as_json["body"].startswith("Reported figure")


def test_show_names_the_nearest_ids_when_one_is_unknown(kb: KnowledgeBase) -> None:
    copy_samples(kb)
    missing = run_kb("show", "2026-11-30-tiny-lm-eagr-0a1b2c")
    assert missing.returncode == 1
    assert missing.stderr == (
        f"kb: error: no entry '2026-11-30-tiny-lm-eagr-0a1b2c' in {kb.entries_path}; "
        "did you mean 2026-11-30-tiny-lm-eager-0a1b2c?\n"
    )
    ambiguous = run_kb("show", "2026")
    assert ambiguous.stderr.startswith("kb: error: '2026' matches 2 entries")
    broken = run_kb("show", str(kb.entries_path / "bad-kind.md"))
    assert broken.returncode == 1 and broken.stderr.startswith(f"kb: error: {kb.entries_path / 'bad-kind.md'}:5: kind:")


def test_schema_prints_the_json_schema(kb: KnowledgeBase) -> None:
    schema = json.loads(run_kb("schema").stdout)
    assert schema["properties"]["versions"]["additionalProperties"] == {"type": "string"}
    assert Path(run_kb("schema", "--path").stdout.strip()).is_file()


def test_a_broken_config_is_named(kb: KnowledgeBase) -> None:
    kb.config_path.write_text("[record]\ntail_lines = 'many'\n")
    result = run_kb("record", "--", "true")
    assert result.stderr == (
        f"kb: error: {kb.config_path}: [record] tail_lines: expected a whole number >= 0, found 'many'\n"
    )
    kb.config_path.write_text("[record\n")
    assert run_kb("record", "--", "true").stderr.startswith(f"kb: error: {kb.config_path}: not valid TOML:")


def test_help_and_every_command_start_without_heavy_imports() -> None:
    heavy = {"torch", "whoosh", "sqlite_utils", "markdown", "jsonschema", "pydantic", "jinja2", "nh3"}
    commands = [["--help"], ["record", "--help"], ["show", "--help"], ["ls", "--help"], ["init", "--help"],
                ["site", "build", "--help"], ["ingest", "junit", "--help"], ["add", "--help"]]  # fmt: skip
    for args in commands:
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "kb", *args], capture_output=True, text=True)
        assert out.returncode == 0
        imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
        assert not imported & heavy, (args, imported & heavy)


def imported_by(*args: str) -> set[str]:
    """The modules a `kb` process imports (as `python -X importtime` lists them)."""
    out = subprocess.run([*KB_COMMAND[:-2], "-X", "importtime", "-m", "kb", *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}


def test_ls_of_an_unchanged_base_reads_no_entry_and_no_settings(kb: KnowledgeBase) -> None:
    copy_samples(kb)
    assert run_kb("index").returncode == 0
    imported = imported_by("ls")
    assert "kb.index.query" in imported  # it did list, from the index
    assert not imported & {"yaml", "fastjsonschema", "kb.store.config", "tomllib", "kb.secrets.redact", "rich"}


def test_the_vendored_secret_rules_load_without_a_toml_parser() -> None:
    code = "import sys\nfrom kb.secrets import gitleaks\nassert gitleaks.rules()\nprint('tomllib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "False\n"


def test_the_garbage_collector_pauses_only_while_kb_starts() -> None:
    """Start-up makes modules and classes that live until exit: the collector is off while they load, they are frozen
    out of later collections, and the command runs with the collector on."""
    code = """
import gc, sys
import kb.cli
seen = {}
load = kb.cli.load
def loading(name):
    seen["loading"] = gc.isenabled()
    return load(name)
def running():
    seen["running"] = gc.isenabled(), gc.get_freeze_count() > 0
kb.cli.load, kb.cli.main = loading, running
sys.argv = ["kb", "schema"]
from kb.launch import main
main()
print(seen)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout == "{'loading': False, 'running': (True, True)}\n", out.stderr


def test_every_command_has_help() -> None:
    import typer.main

    from kb.cli import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        assert command.help and command.help.strip(), name
        for param in command.params:
            if param.name not in ("ctx",):
                assert getattr(param, "help", None) or param.param_type_name == "argument", (name, param.name)


def test_a_recorded_command_is_named_by_what_ran_never_by_the_folders_it_lies_in(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    script = tmp_path / "exp" / "train.py"
    script.parent.mkdir()
    script.write_text("print('step 1')\n")
    result = run_kb("record", "--", sys.executable, str(script))
    assert result.returncode == 0, result.stderr
    (entry,) = [kb.load(path.stem) for path in kb.iter_entry_paths()]
    assert entry.title == "train" and entry.id.rsplit("-", 1)[0].endswith("-train"), entry.id
    from ingest.describe import command_title

    assert command_title(["python", "-m", "pkg.mod", "--x"]) == "mod"
    assert command_title(["torchrun", "--nproc-per-node", "8", "/fsx/me/run/pretrain.py"]) == "pretrain"
    assert command_title(["/opt/venv/bin/python3.11", "-u", "-X", "dev", "./bench.sh"]) == "bench"


def test_commands_that_write_an_entry_print_its_id_on_stdout_and_json_when_asked(kb: KnowledgeBase) -> None:
    added = run_kb("release", "torch", "2.13.0", "--date", "2026-11-01")
    assert added.returncode == 0 and added.stderr.startswith("kb: recorded release ")
    assert kb.load(added.stdout.strip()).kind == "release" and added.stdout.count("\n") == 1
    decided = run_kb("decide", "--title", "t", "--question", "q", "--choice", "c", "--evidence",
                     added.stdout.strip()[-6:], "--json")  # fmt: skip
    as_json = json_data(decided.stdout)
    assert set(as_json) == {"id", "short_id", "path", "kind", "status"} and as_json["kind"] == "decision"
    assert as_json["short_id"] == as_json["id"][-6:] and Path(as_json["path"]).is_file()
    after = run_kb("record", "--title", "earlier run", "--status", "completed", "--no-edit")
    assert kb.load(after.stdout.strip()).title == "earlier run"
    run = run_kb("record", "--json", "--", sys.executable, "-c", "print('out')")
    assert run.stdout.startswith("out\n") and json_data(run.stdout[4:])["status"] == "completed"
    checked = run_kb("check", "--json")
    assert checked.returncode == 0 and json_data(checked.stdout) == {"checked": 4, "problems": []}
    (kb.entries_path / "broken.md").write_text("---\nschema: 1\n---\n")
    broken = json_data(run_kb("check", "--json").stdout)
    assert broken["problems"] and broken["problems"][0]["path"].endswith("broken.md")


def test_a_command_that_never_started_is_named_on_the_terminal(kb: KnowledgeBase) -> None:
    kept = run_kb("record", "--", "kb-no-such-command-xyz")
    assert kept.returncode == 127
    assert kept.stderr.splitlines()[0] == "kb: command not found: kb-no-such-command-xyz"
    assert len(list(kb.iter_entry_paths())) == 1  # kept by default: a missing tool says something about a machine
    dropped = run_kb("record", "--discard-unstarted", "--", "kb-no-such-command-xyz")
    assert dropped.returncode == 127 and dropped.stderr.splitlines() == [
        "kb: command not found: kb-no-such-command-xyz",
        "kb: no entry kept (--discard-unstarted)",
    ]
    assert len(list(kb.iter_entry_paths())) == 1 and not list(kb.entries_path.glob("*/"))[1:]


def test_unknown_filter_values_name_the_known_ones(kb: KnowledgeBase) -> None:
    copy_samples(kb)
    none = "is not recorded by any entry; recorded:"
    for args, message in (
        (["--backend", "neuronn"], f"--backend 'neuronn' {none} neuron (did you mean neuron?)"),
        (["--workload", "qwen3-32b-trian"], f"--workload 'qwen3-32b-trian' {none} qwen3-32b-train (did you mean "
                                            "qwen3-32b-train?)"),
        (["--mode", "compild"], f"--mode 'compild' {none} compiled (did you mean compiled?)"),
        (["--status", "complete"], "--status 'complete' is not one of: completed, failed, interrupted, killed, "
                                   "running (did you mean completed?)"),
        (["--kind", "reprot"], "--kind 'reprot' is not one of: run, coverage, decision, report, note, release "
                               "(did you mean report?)"),
    ):  # fmt: skip
        for command in (["ls"], ["search", "qwen"]):
            result = run_kb(*command, *args)
            assert (result.returncode, result.stderr.splitlines()[-1]) == (1, f"kb: error: {message}"), (command, args)
    assert "did you mean compile_timeout?" in run_kb("ls", "--failure", "compile_timout").stderr


def test_help_has_a_short_flag_and_shell_completion() -> None:
    short = run_kb("-h")
    assert short.returncode == 0 and short.stdout == run_kb("--help").stdout
    assert "--install-completion" in short.stdout and run_kb("ls", "-h").stdout.startswith("Usage: python -m kb ls")
    kb_script = str(Path(sys.executable).parent / "kb")  # completion answers for the program's own name
    for words, expected in (
        ("kb sh", "show"),
        ("kb ls --status f", "failed"),
        ("kb ls --failure compile_t", "compile_timeout"),
    ):
        env = {
            **os.environ,
            "_KB_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        done = subprocess.run([kb_script], env=env, capture_output=True, text=True)
        assert done.stdout.split() == [expected], (words, done.stdout, done.stderr)
