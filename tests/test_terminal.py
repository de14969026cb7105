"""kb's output for people: in a real pseudo-terminal at 80 and 120 columns, and in a pipe.

The knowledge base is the one kb ships (entries/) plus a failed run recorded after the fact and entries
whose text is hostile to a terminal: markup-like brackets from real failure messages and escape sequences.
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import termios

import pytest
from conftest import REPO, json_data, run_kb, write_entry
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from kb.model.entry import new_entry
from kb.store.knowledge_base import KnowledgeBase

MEASURED = "2026-11-30-tiny-lm-cpu-compiled-b5c3dc"
REPORTED = "2026-11-30-semianalysis-gpt-oss-training-recipe-waited-27-m-cad594"
FAILED_AFTER = "2026-11-30-llama-tiny-cuda-eager-8e4ad8"  # recorded after the fact: a record-time environment
HOSTILE = "2026-12-01-ddp-gloo-crash-c0ffee"
GLOO = "[/opt/conda/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:4242"
ALLOC = "[enforce fail at alloc_cpu.cpp:127] data. DefaultCPUAllocator: not enough memory"
TITLE_ESCAPES = "ddp crash \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2J[bold]done[/bold]"
WIDTHS = (80, 120)
# What rich itself writes: colours and styles (SGR) and hyperlinks (OSC 8). Anything else is from an entry.
_OWN_CODES = re.compile(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b\x07]*(?:\x1b\\|\x07)")


@pytest.fixture
def shipped(kb: KnowledgeBase) -> KnowledgeBase:
    for path in (REPO / "entries").iterdir():
        target = kb.entries_path / path.name
        shutil.copytree(path, target) if path.is_dir() else shutil.copy(path, target)
    shutil.copy(REPO / "tests/data/schema-v1" / f"{FAILED_AFTER}.md", kb.entries_path)
    write_entry(
        kb, HOSTILE, TITLE_ESCAPES, body=f"The rank died:\n\n```\n{GLOO}\n{ALLOC}\n\x1b]0;body\x07\n```\n",
        recorded="2026-12-01T10:00:00Z", status="failed", backend="cpu", mode="eager", workload={"name": "ddp"},
        failure={"class": "oom", "message": f"{GLOO} {ALLOC}", "explanation": "\x1b]52;c;Y2xpcA==\x07 [/red]"},
    )  # fmt: skip
    return kb


def in_terminal(columns: int, *args: str) -> tuple[int, str]:
    """The real `kb` in a pseudo-terminal `columns` wide; what it printed, rich's own codes removed."""
    import pty

    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES", "NO_COLOR")}
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        os.execve(sys.executable, [sys.executable, "-m", "kb", *args], {**env, "TERM": "xterm-256color"})
    output = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), _OWN_CODES.sub("", output.decode()).replace("\r\n", "\n")


def assert_fits(text: str, columns: int) -> list[str]:
    lines = text.splitlines()
    too_long = [line for line in lines if cell_len(line) > columns]
    assert not too_long, too_long
    return lines


def assert_no_control(text: str) -> None:
    """Nothing an entry held reaches the terminal as a control character: all are shown as escapes."""
    assert not [ch for ch in text if (ord(ch) < 32 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F], repr(text)


@pytest.mark.parametrize("columns", WIDTHS)
def test_ls_fits_the_terminal_with_short_ids_and_titles_cut_last(shipped: KnowledgeBase, columns: int) -> None:
    code, out = in_terminal(columns, "ls", "--limit", "0")
    assert code == 0, out
    header, *rows = assert_fits(out, columns)
    assert header.split()[:2] == ["id", "status"] and header.split()[-1] == "title"
    assert len(rows) == len(list(shipped.iter_entry_paths()))
    by_id = {row.split()[0]: row for row in rows}
    assert {"b5c3dc", "cad594", "8e4ad8", "c0ffee"} <= set(by_id)  # short ids, each whole
    assert by_id["b5c3dc"].endswith("tiny-lm cpu compiled")
    assert by_id["cad594"].rstrip().endswith("…")  # the long title is cut, not wrapped onto another line
    assert "report" in by_id["cad594"] and "oom" in by_id["8e4ad8"]
    if columns >= 120:
        assert "19.2 s" in by_id["b5c3dc"] and "compiled" in by_id["b5c3dc"].split("tiny-lm cpu")[0]


def test_ls_in_a_pipe_is_one_whole_tab_separated_line_per_entry(shipped: KnowledgeBase) -> None:
    piped = run_kb("ls", "--limit", "0")
    lines = piped.stdout.splitlines()
    assert len(lines) == len(list(shipped.iter_entry_paths()))
    rows = {line.split("\t")[0]: line.split("\t") for line in lines}
    assert all(len(cells) == 9 for cells in rows.values()), lines
    assert all(line == line.strip() for line in lines)
    assert rows[REPORTED][-1] == "SemiAnalysis: gpt-oss training recipe waited 27 min 17 s for compilation on Trainium"
    assert rows[MEASURED][1:8] == ["completed", "run", "tiny-lm", "cpu", "compiled", "-", "19.2 s"]
    assert rows[FAILED_AFTER][6] == "oom"
    assert "\x1b" not in piped.stdout and rows[HOSTILE][-1].startswith("ddp crash \\x1b]0;pwned\\x07 ")
    as_json = {row["id"]: row for row in json_data(run_kb("ls", "--json").stdout)}
    assert as_json[MEASURED]["wall_s"] == 19.177 and as_json[MEASURED]["step_s_median"] == 0.0347019  # full precision
    as_csv = run_kb("ls", "--csv").stdout
    assert "\x1b" not in as_csv and "ddp crash \\x1b]0;pwned\\x07" in as_csv


def test_lists_into_a_pipe_do_without_rich_unless_a_variable_asks_for_a_terminal(
    shipped: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Importing Rich is a tenth of a second: a list that goes to no terminal is written without it.
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):  # what the environment running the tests may set
        monkeypatch.delenv(name, raising=False)
    for args in (["ls"], ["search", "compile"]):
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "kb", *args], capture_output=True, text=True)
        imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
        assert out.returncode == 0 and "\t" in out.stdout and "rich" not in imported, args
        # FORCE_COLOR makes the output a terminal's to Rich: then Rich lays it out, colours included
        forced = run_kb(*args, env={"FORCE_COLOR": "1"})
        assert "\t" not in forced.stdout and "\x1b[" in forced.stdout, args


def test_short_ids_are_taken_by_every_command_and_named_when_ambiguous(shipped: KnowledgeBase) -> None:
    assert run_kb("show", "b5c3dc").stdout.startswith("tiny-lm cpu compiled\n")
    assert run_kb("show", "b5c3").stdout.startswith("tiny-lm cpu compiled\n")  # four characters, as git takes
    compared = run_kb("compare", "208462", "b5c3dc", "--json")
    assert compared.returncode == 0, compared.stderr
    twin = f"2026-12-02-other-run-{'b5c3dc'}"
    write_entry(shipped, twin, "other", recorded="2026-12-02T00:00:00Z", status="completed")
    ambiguous = run_kb("show", "b5c3dc")
    assert ambiguous.returncode == 1
    assert ambiguous.stderr.startswith("kb: error: 'b5c3dc' matches 2 entries")
    code, out = in_terminal(120, "ls")
    assert code == 0, out
    ids = [line.split()[0] for line in out.splitlines()[1:]]
    assert MEASURED in ids and twin in ids and "b5c3dc" not in ids  # a shared suffix is shown whole
    assert run_kb("show", MEASURED).stdout.splitlines()[1] == MEASURED


def test_show_leads_with_the_answer_for_a_measured_run(shipped: KnowledgeBase) -> None:
    code, out = in_terminal(80, "show", "b5c3dc")
    assert code == 0, out
    lines = assert_fits(out, 80)
    assert lines[:2] == ["tiny-lm cpu compiled", f"b5c3dc  {MEASURED}"]
    start = next(n for n, line in enumerate(lines) if line.startswith("status "))
    headline = [line.rstrip() for line in lines[start : start + 9]]
    assert headline[:5] == [
        "status       completed after 19.2 s (exit 0)",
        "steady step  34.7 ms median (p10 31.2 ms – p90 40 ms, 70 steps)",
        "throughput   14,754 tokens/s · 230.5 samples/s",
        "metrics      loss 0.848 at step 79",
        "preparation  load 18.1 ms · first step 7.53 s · warm-up 309 ms · compile 7.42 s",
    ]
    assert headline[5].strip() == "(partly warm)"  # the only line that folds at 80 columns
    assert "compile      3 graphs, 7 frames, 4 graph breaks, 0 recompiles" in headline
    assert "on device    The target is the CPU, so CPU fallback does not apply." in headline
    frames = lines[lines.index("Compile frames") + 1 :][:8]
    assert frames[0].split() == ["frame", "function", "compile", "aot", "backend", "fx", "aot", "cache"]
    assert frames[1].split() == ["0/0", "train_step", "3.6", "s", "1.73", "s", "-", "hit", "hit"]
    assert "torch_dynamo_resume_in_train" in frames[2] and "…" in frames[2]
    assert "Graph breaks (3 sites, met 4×)" in lines
    assert "parameters  0 of 28 off cpu" in [line.rstrip() for line in lines]
    assert "frames[0]" not in out and "kb show b5c3dc --all: every field as stored" in out
    everything = run_kb("show", "b5c3dc", "--all").stdout
    assert "frames[0]" in everything and "14754.2 tokens/s" in everything  # as stored, for --all


def test_show_headline_of_a_failure_recorded_after_the_fact(shipped: KnowledgeBase) -> None:
    code, out = in_terminal(120, "show", "8e4ad8")
    assert code == 0, out
    lines = [line.rstrip() for line in assert_fits(out, 120)]
    assert "status       failed" in lines
    assert "failure      oom — torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB" in lines
    assert "environment  versions and hardware read when the entry was recorded, not when the run ran" in lines
    assert "Versions (read when the entry was recorded, not when the run ran)" in lines
    assert "Hardware (read when the entry was recorded, not when the run ran)" in lines


def test_show_headline_of_a_reported_result(shipped: KnowledgeBase) -> None:
    out = run_kb("show", "cad594").stdout
    lines = out.splitlines()
    assert lines[2].startswith("report (reported)  gpt-oss-train · neuron · compiled")
    assert "status    reported by SemiAnalysis on 2025-10-23" in lines
    assert "reported  compile_s 27 min 17 s" in lines
    assert all(line == line.rstrip() for line in lines)  # a pipe gets no padding


@pytest.mark.parametrize("columns", WIDTHS)
def test_text_from_entries_is_data_on_every_path(shipped: KnowledgeBase, columns: int) -> None:
    # Whole ids: the text, not the short ids, is on trial here.
    for args in (
        ["show", HOSTILE],
        ["ls"],
        ["search", "gloo"],
        ["search", "enforce"],
        ["compare", FAILED_AFTER, HOSTILE],
    ):
        code, out = in_terminal(columns, *args)
        assert code == 0, (args, out)
        assert_fits(out, columns)
        assert_no_control(out)
        if args[0] == "show":
            assert "[/opt/conda/gloo/transport/tcp/pair.cc:598]" in out and "[enforce fail at alloc_cpu.cpp:127]" in out
            assert "\\x1b]0;pwned\\x07" in out and "[bold]done[/bold]" in out
            assert "\\x1b]52;c;Y2xpcA==\\x07 [/red]" in out and "\\x1b]0;body\\x07" in out
    for args in (["show", HOSTILE], ["search", "gloo"], ["compare", FAILED_AFTER, HOSTILE], ["show", HOSTILE, "--all"]):
        piped = run_kb(*args)
        assert piped.returncode == 0 and "\x1b" not in piped.stdout and "\x07" not in piped.stdout, args
        assert "[/opt/conda/gloo/transport/tcp/pair.cc:598]" in piped.stdout or args[0] == "compare"
        assert "[enforce fail at alloc_cpu.cpp:127]" in piped.stdout or args[0] != "show"


_BRACKETED = st.lists(
    st.one_of(
        st.sampled_from(["[", "]", "[/", "[/red]", "[bold]", "[link=x]", "\\[", "[enforce fail at a.cpp:1]", "\x1b",
                         "\x1b]0;t\x07", "\x1b[2J", "\x9b", "\x07", "\r", "\t", "\n", "\u202e", "\x00", "\x7f"]),
        st.text(max_size=8),
    ),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(title=_BRACKETED, message=_BRACKETED, body=_BRACKETED)
def test_bracketed_text_and_control_characters_print_as_written(title: str, message: str, body: str) -> None:
    from kb.terminal.plain import safe
    from kb.terminal.rich_text import entry_view, rows_table

    entry = new_entry("2026-12-01-fuzz-abcdef", title or "t", "run", recorded="2026-12-01T00:00:00Z",
                      status="failed", failure={"class": "oom", "message": message})  # fmt: skip
    entry.body = body
    row = {"id": entry.id, "title": title or "t", "kind": "run", "status": "failed", "source": None,
           "workload": message, "backend": None, "mode": None, "failure_class": "oom", "wall_s": 1.0}  # fmt: skip
    for renderable in (entry_view(entry, width=2000), rows_table([row], width=2000)):
        screen = Console(file=io.StringIO(), width=2000, force_terminal=True, color_system="standard")
        screen.print(renderable)
        out = _OWN_CODES.sub("", screen.file.getvalue())
        assert_no_control(out.replace("\t", ""))
        assert safe(title or "t", one_line=True).strip() in out  # every character kept, markup-like or not


def test_figures_are_humanised_with_their_units() -> None:
    from kb.text import humanize

    assert [humanize.number(v) for v in (14754.2, 689300.0, 230.535, 0.848021, 3, 0.0)] == [
        "14,754", "689,300", "230.5", "0.848", "3", "0"
    ]  # fmt: skip
    assert [humanize.duration(s) for s in (1637, 11580, 19.177, 0.0347019, 3e-5, 120)] == [
        "27 min 17 s", "3.2 h", "19.2 s", "34.7 ms", "30 µs", "2 min"
    ]  # fmt: skip
    assert [humanize.size(b) for b in (1.2e9, 132, 2300, 999_999)] == ["1.2 GB", "132 B", "2.3 kB", "1 MB"]
    assert humanize.quantity(14754.2, "tokens/s") == "14,754 tokens/s"
    assert humanize.quantity(1637.0, "s") == "27 min 17 s"
    assert humanize.field("host_peak_rss_gb", 1.2) == "1.2 GB" and humanize.number(float("nan")) == "nan"


def test_graph_breaks_and_recompiles_are_counted_by_reason() -> None:
    from kb.model.entry import Entry
    from kb.text.headline import sections

    entry = Entry.read(REPO / "tests/data/schema-v1/2026-11-30-test-mlp-cpu-compiled-0a8c18.md")
    found = dict(sections(entry))
    assert found["Recompiles (2)"] == [
        ("1×", "with_branch: 0/0: tensor 'x' size mismatch at index 0. expected 16, actual 4"),
        ("1×", "torch_dynamo_resume_in_with_branch_at_37: 1/0: tensor 'y' size mismatch at index 0. expected 16, "
               "actual 4"),
    ]  # fmt: skip
    assert [count for count, _ in found["Graph breaks (1 site, met 2×)"]] == ["2×"]
    assert found["Compile frames"].rows[2][-1] == "0/0: tensor 'x' size mismatch at index 0. expected 16, actual 4"


def test_figures_are_read_by_their_unit_rates_before_seconds() -> None:
    from kb.text import humanize

    assert humanize.field("tokens_per_s", 1104.2) == "1,104 tokens/s"  # not 18 min 24 s
    assert humanize.field("samples_per_s_median_step", 20.66) == "20.66 samples/s"
    assert humanize.field("compile_s", 1637.0) == "27 min 17 s" and humanize.field("wall_s", 19.177) == "19.2 s"
    assert humanize.field("latency", 0.5, "s") == "500 ms"  # a metric's own unit first
    assert humanize.field("host_peak_rss_gb", 0.335) == "335 MB" and humanize.field("memory_gb", 23.5) == "23.5 GB"


CAPTURED = "2026-12-01-tiny-lm-cpu-compiled-5ca1ed"


def test_show_labels_rates_graph_break_sites_memory_and_whole_keys_at_80_columns(kb: KnowledgeBase) -> None:
    rate = {"unit": "tokens/s", "phase": "steady"}
    write_entry(
        kb, CAPTURED, "tiny-lm captured", recorded="2026-12-01T10:00:00Z", status="completed", backend="cpu",
        mode="compiled", workload={"name": "tiny-lm"}, command={"line": "python train_tiny_lm.py", "cwd": "/srv/lm"},
        metrics={"tokens_per_s": {"value": 1104.2, **rate}, "tokens_per_s_median_step": {"value": 1322.4, **rate},
                 "samples_per_s": {"value": 17.25, "unit": "samples/s"},
                 "samples_per_s_median_step": {"value": 20.66, "unit": "samples/s"}, "loss": {"value": 0.84}},
        memory={"host_peak_rss_gb": 0.335},
        settings={"torch_num_interop_threads": 1, "note": "a value long enough that it has to fold " * 3},
        compile={"graph_breaks": {"count": 3, "reasons": [
            {"reason": "Unsupported Tensor.backward() call", "count": 2, "at": "/srv/lm/train_tiny_lm.py:94"},
            {"reason": "Call to `torch._dynamo.graph_break()`", "count": 1, "at": "/opt/lib/other.py:7"}]}},
    )  # fmt: skip
    code, out = in_terminal(80, "show", CAPTURED)
    assert code == 0, out
    lines = [line.rstrip() for line in assert_fits(out, 80)]
    assert "throughput  1,104 tokens/s (wall) · 1,322 tokens/s (median step) · 17.25" in lines
    assert any(line.strip() == "samples/s (wall) · 20.66 samples/s (median step)" for line in lines)
    assert "metrics     loss 0.84" in lines and "memory      host peak RSS 335 MB" in lines
    breaks = lines[lines.index("Graph breaks (2 sites, met 3×)") + 1 :][:2]
    assert breaks == ["2×  at train_tiny_lm.py:94: Unsupported Tensor.backward() call",
                      "1×  at /opt/lib/other.py:7: Call to `torch._dynamo.graph_break()`"]  # fmt: skip
    assert "torch_num_interop_threads  1" in lines  # the key whole; the long value below it folds instead
    note = next(n for n, line in enumerate(lines) if line.startswith("note "))
    assert lines[note].startswith("note                       a value long") and lines[note + 1].startswith(" " * 27)


def test_show_breaks_its_facts_line_between_facts_never_inside_a_name() -> None:
    from kb.terminal.rich_text import entry_view

    author = "Alexandra Konstantinopoulou <a.konstantinopoulou@lab.example>"
    entry = new_entry("2026-11-30-tiny-lm-cpu-eager-2fd50f", "tiny-lm cpu eager", "run", status="completed",
                      recorded="2026-11-30T07:54:22Z", workload={"name": "tiny-lm"}, backend="cpu", mode="eager",
                      author=author, tags=["demo"])  # fmt: skip
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(entry_view(entry, width=80))
    lines = console.file.getvalue().splitlines()
    assert all(cell_len(line) <= 80 for line in lines)
    assert f"  by {author} · tags demo" in lines  # the name and its address whole, on the next line
    assert lines[2].endswith("recorded 2026-11-30T07:54:22Z ·")
