"""`kb record` without a command: runs that already happened, from options, logs, run folders and $EDITOR."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from conftest import REPO, only_entry, run_kb, run_kb_in_terminal

from kb.store.knowledge_base import KnowledgeBase


def test_options_alone_record_a_run_with_the_environment_of_now(kb: KnowledgeBase) -> None:
    result = run_kb(
        "record",
        "--title",
        "Llama on trn2",
        "--backend",
        "neuron",
        "--status",
        "completed",
        "--metric",
        "tokens_per_s=11099 tokens/s",
        "--note",
        "Ran on the cluster last night.",
        "--no-edit",
    )
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.status == "completed"
    assert entry.data["provenance"] == {"source": "measured", "tool": "kb record", "environment": "record_time"}
    assert "python" in entry.data["versions"] and "git" not in entry.data
    assert entry.data["metrics"]["tokens_per_s"] == {"value": 11099.0, "unit": "tokens/s"}
    assert entry.body == "Ran on the cluster last night.\n"


def test_a_log_with_a_failure_signature_proposes_status_and_class(kb: KnowledgeBase, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(
        "step 10 loss 2.31\n"
        "[rank0]: Traceback (most recent call last):\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.10 GiB of which 1.12 GiB is free.\n"
    )
    result = run_kb("record", "--workload", "llama3-8b", "--backend", "cuda", "--log", str(log), "--no-edit")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.status == "failed"
    failure = entry.data["failure"]
    assert failure["class"] == "oom" and failure["assigned"] == "auto"
    assert failure["evidence"].startswith("train.log:3: ")
    assert "failure class oom proposed from train.log:3" in result.stderr
    assert (kb.attachments_path(entry) / "train.log").read_text() == log.read_text()
    assert "step 10 loss 2.31" in entry.body  # the log's tail is shown


def test_a_stated_failure_class_wins_over_the_log(kb: KnowledgeBase, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n")
    run_kb(
        "record",
        "--title",
        "t",
        "--failure",
        "compile_timeout",
        "--explain",
        "The compile budget ran out first.",
        "--log",
        str(log),
        "--no-edit",
    )
    failure = only_entry(kb).data["failure"]
    assert failure["class"] == "compile_timeout" and failure["assigned"] == "manual"
    assert failure["explanation"] == "The compile budget ran out first."


def write_run_folder(folder: Path) -> None:
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps(
            {
                "title": "qwen3 on trn2 node 7",
                "status": "completed",
                "backend": "neuron",
                "command": {"argv": ["torchrun", "train.py"], "line": "torchrun train.py", "cwd": "/fsx/run"},
                "versions": {"torch": "2.13.0", "torch-neuronx": "2.13.3.0", "python": "3.11.9"},
                "hardware": {"hostname": "trn2-node-7", "accelerators": [{"vendor": "aws", "name": "trainium2"}]},
                "timings": {"started": "2026-11-29T22:00:00Z", "ended": "2026-11-29T23:30:00Z", "compile_s": 1637.0},
                "id": "2026-01-01-forged-000000",
            }
        )
    )
    events = [
        {"event": "metric", "name": "tokens_per_s", "value": 14156, "unit": "tokens/s", "better": "higher"},
        {"event": "set", "field": "timings.warmup_s", "value": 42.5},
        {"event": "note", "text": "Static shapes: padded to 4096."},
        {"event": "set", "field": "timings.load_s", "value": "slow"},
    ]
    text = "".join(json.dumps(e) + "\n" for e in events) + '{"event": "metric", "name": "lo'  # torn by a kill
    (folder / "events.jsonl").write_text(text)
    (folder / "profile").mkdir()
    (folder / "profile" / "trace.json").write_text('{"traceEvents": []}')


def test_a_run_folder_from_a_training_node_is_imported(kb: KnowledgeBase, tmp_path: Path) -> None:
    write_run_folder(tmp_path / "run-7")
    result = run_kb("record", "--from", str(tmp_path / "run-7"), "--tag", "cluster", "--no-edit")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    data = entry.data
    assert entry.id.startswith("2026-11-29-qwen3-on-trn2-node-7-")  # dated by the run, not by the import
    assert entry.title == "qwen3 on trn2 node 7" and entry.status == "completed"
    assert data["provenance"] == {"source": "measured", "tool": "kb record --from", "environment": "run_time"}
    assert data["versions"]["torch-neuronx"] == "2.13.3.0"
    assert data["hardware"]["hostname"] == "trn2-node-7"
    assert data["timings"]["wall_s"] == 5400.0 and data["timings"]["warmup_s"] == 42.5
    assert data["timings"]["compile_s"] == 1637.0
    assert data["metrics"]["tokens_per_s"]["value"] == 14156
    assert "Static shapes: padded to 4096." in entry.body
    assert "events.jsonl:4: timings.load_s: expected number or null" in entry.body
    assert "events.jsonl:5: incomplete last line" in entry.body
    paths = {a["path"].split("/", 1)[1] for a in data["attachments"]}
    assert paths == {"run/run.json", "run/events.jsonl", "run/profile/trace.json"}


def test_a_run_folder_whose_run_never_closed_is_killed(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps({"title": "died", "status": "running", "timings": {"started": "2026-11-29T22:00:00Z"}})
    )
    run_kb("record", "--from", str(folder), "--no-edit")
    entry = only_entry(kb)
    assert entry.status == "killed" and entry.data["failure"]["class"] == "crash"


def test_bad_run_folders_and_files_are_clear_errors_and_write_nothing(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.json").write_text("{not json")
    cases = {
        ("--from", str(tmp_path / "missing")): f"{tmp_path / 'missing'}: no such run folder",
        ("--from", str(tmp_path / "empty")): f"{tmp_path / 'empty'}: not a run folder",
        ("--from", str(tmp_path / "broken")): f"{tmp_path / 'broken' / 'run.json'}: not valid JSON",
        ("--log", str(tmp_path / "nope.log")): f"{tmp_path / 'nope.log'}: no such file to attach",
        (): "name the run: give --title, or --workload",
    }
    for args, message in cases.items():
        result = run_kb("record", *args, "--no-edit")
        assert result.returncode == 1
        assert result.stderr.startswith(f"kb: error: {message}"), result.stderr
    assert list(kb.entries_path.iterdir()) == []


def write_editor(tmp_path: Path, text: str) -> Path:
    editor = tmp_path / "fake-editor"
    body = tmp_path / "typed.md"
    body.write_text(text)
    editor.write_text(f'#!/bin/sh\ngrep -q \'Failure explanation\' "$1" && cat {body} > "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    return editor


TYPED = """<!-- kb: notes -->
## Notes

Tried bf16 first; loss diverged at step 300.

## Adaptations

- Replaced FlexAttention with SDPA (2 hours).

## Failure explanation

The compiler rejected the custom mask.
"""


def test_notes_are_written_in_the_editor(kb: KnowledgeBase, tmp_path: Path) -> None:
    editor = write_editor(tmp_path, TYPED)
    result = run_kb(
        "record",
        "--title",
        "flex attention on trn3",
        "--status",
        "failed",
        "--edit",
        env={"EDITOR": str(editor), "VISUAL": ""},
    )
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.body == (
        "Tried bf16 first; loss diverged at step 300.\n\n## Adaptations\n\n"
        "- Replaced FlexAttention with SDPA (2 hours).\n"
    )
    assert entry.data["failure"]["explanation"] == "The compiler rejected the custom mask."
    assert entry.data["failure"]["class"] == "crash"


def test_the_editor_opens_in_a_terminal_by_itself(kb: KnowledgeBase, tmp_path: Path) -> None:
    # A real pseudo-terminal: without --note or --no-edit, kb asks for notes as git asks for a message.
    editor = write_editor(tmp_path, TYPED)
    code, output = run_kb_in_terminal(
        "record", "--title", "typed", "--status", "failed", env={"EDITOR": str(editor), "VISUAL": ""}
    )
    assert code == 0, output
    assert only_entry(kb).data["failure"]["explanation"] == "The compiler rejected the custom mask."


def test_a_failing_editor_records_nothing(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--title", "x", "--edit", env={"EDITOR": "false", "VISUAL": ""})
    assert result.returncode == 1
    assert result.stderr == "kb: error: the editor 'false' exited with code 1; nothing was recorded\n"
    assert list(kb.entries_path.iterdir()) == []


def test_the_handover_writer_works_without_kb_installed(tmp_path: Path) -> None:
    # Copied alone next to a script, the writer needs nothing but the standard library.
    (tmp_path / "handover.py").write_bytes((REPO / "ingest" / "handover.py").read_bytes())
    script = "import handover; handover.metric('loss', 1.5); print(handover.run_dir())"
    folder = tmp_path / "run"
    folder.mkdir()
    out = subprocess.run(
        [sys.executable, "-S", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"KB_RUN_DIR": str(folder), "PATH": os.environ["PATH"]},
        check=True,
    )
    assert out.stdout.strip() == str(folder)
    event = json.loads((folder / "events.jsonl").read_text())
    assert event["event"] == "metric" and event["name"] == "loss" and event["value"] == 1.5


def _run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run-folder"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"title": "hostile run folder", "status": "completed"}))
    (folder / "train.log").write_text("step 1 loss 2.0\n")
    return folder


def test_only_the_run_folders_regular_files_are_copied_and_the_others_named(kb: KnowledgeBase, tmp_path: Path) -> None:
    import socket

    folder = _run_folder(tmp_path)
    os.mkfifo(folder / "pipe")  # opened for reading, it waits for good for a writer
    (folder / "zero").symlink_to("/dev/zero")  # a device: a copy never ends
    (folder / "elsewhere").symlink_to(tmp_path / "private.txt")
    (tmp_path / "private.txt").write_text("not the run's\n")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(folder / "socket"))
        long_name = "n" * 240 + ".log"  # with a copy's temporary suffix, past the 255 bytes of a file name
        (folder / long_name).write_text("kept\n")
        result = run_kb("record", "--from", str(folder), "--no-edit", timeout=60)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.status == "completed"
    copied = kb.attachments_path(entry) / "run"
    assert sorted(path.name for path in copied.iterdir() if len(path.name) < 100) == ["run.json", "train.log"]
    (long_copy,) = [path for path in copied.iterdir() if len(path.name) >= 100]
    assert long_copy.read_text() == "kept\n" and len(long_copy.name) <= 200 and long_copy.name.endswith(".log")
    problems = entry.data["provenance"]["capture_problems"]
    assert problems == [
        "elsewhere: a symbolic link, not copied",
        f"{long_name}: a name of 244 bytes, copied as {long_copy.name}",
        "pipe: a FIFO, not copied",
        "socket: a socket, not copied",
        "zero: a symbolic link, not copied",
    ]


def test_a_long_name_holding_a_credential_is_masked_before_it_is_cut(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = _run_folder(tmp_path)
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"[:36]
    long_name = "n" * 150 + "-" + token + "-" + "m" * 40 + ".log"  # 236 bytes: a cut at 200 falls inside the token
    (folder / long_name).write_text("kept\n")
    result = run_kb("record", "--from", str(folder), "--no-edit", timeout=60)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    names = [path.name for path in kb.attachments_path(entry).rglob("*")]
    said = json.dumps(entry.data)
    for part in (token, token[:20], token[4:24]):
        assert not any(part in name for name in names) and part not in said, part


def test_a_run_folder_of_too_many_files_keeps_what_fits_and_says_so(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = _run_folder(tmp_path)
    many = folder / "shards"
    many.mkdir()
    for number in range(51_000):  # four values each in the entry: past the 200,000 an entry may hold
        (many / f"{number:05d}.txt").touch()
    result = run_kb("record", "--from", str(folder), "--no-edit", timeout=300)
    assert result.returncode == 0, result.stderr
    listed = run_kb("ls")
    assert "hostile run folder" in listed.stdout, listed.stderr  # every command reads the entry
    entry = only_entry(kb)
    assert len(entry.data["attachments"]) <= 10_000
    assert entry.data["provenance"]["capture_problems"][0] == (
        "too many files: the run folder holds 51,002 files; the first 9,900 in path order are copied, 41,102 are not"
    )


def test_a_run_folders_times_are_checked_and_a_nan_loss_kept(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "run-folder"
    folder.mkdir()
    manifest = folder / "run.json"
    bad = {
        '{"started": "nonsense"}': f"{manifest}: timings.started: 'nonsense' is not a time; write it as ISO 8601 "
        "(2026-01-31T09:30:00Z) and import again",
        '{"started": NaN}': f"{manifest}: timings.started: 'nan' is not a time; write it as ISO 8601 "
        "(2026-01-31T09:30:00Z) and import again",
        '{"started": "2026-01-01T00:00:00Z", "wall_s": NaN}': f"{manifest}: timings.wall_s: nan is not a duration; "
        "fix it or leave it out",
    }
    for timings, said in bad.items():
        manifest.write_text(f'{{"title": "diverged", "timings": {timings}}}')
        result = run_kb("record", "--from", str(folder), "--no-edit")
        assert (result.returncode, result.stderr) == (1, f"kb: error: {said}\n")
    assert list(kb.iter_entries()) == []
    manifest.write_text(
        '{"title": "diverged", "status": "completed", "metrics": {"loss": {"value": NaN}}, '
        '"timings": {"started": "2026-01-01T10:00:00Z", "ended": "2026-01-01T09:00:00Z", "wall_s": 3600.5}}'
    )
    result = run_kb("record", "--from", str(folder), "--no-edit")
    assert result.returncode == 0, result.stderr
    data = only_entry(kb).data
    assert data["metrics"]["loss"]["value"] != data["metrics"]["loss"]["value"]  # NaN: what the run measured
    assert data["timings"]["wall_s"] == 3600.5
    assert (
        "run.json: timings.ended is before timings.started: the run's clock stepped back"
        in (data["provenance"]["capture_problems"][0])
    )
