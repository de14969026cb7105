"""`kb ingest compile-trace`: a real TORCH_TRACE folder, written by torch.compile on the CPU, as compile evidence."""

from __future__ import annotations

import gzip
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import only_entry, run_kb, write_entry

from ingest.importers.compile_trace import LOG_GLOB, find_tlparse
from kb.secrets.redact import redact_text
from kb.store.knowledge_base import KnowledgeBase

# One graph break (data-dependent branching) and, with automatic dynamic shapes off, one recompile at the new shape.
TOY = """\
import torch

torch._dynamo.config.automatic_dynamic_shapes = False


def toy(x):
    y = torch.sin(x) * 2
    if y.sum() > 0:
        return y
    return -y


compiled = torch.compile(toy, backend="inductor")
for shape in ((8, 16), (8, 16), (4, 16)):
    compiled(torch.ones(shape))
"""
BREAK_AT = f"<string>:{TOY.splitlines().index('    if y.sum() > 0:') + 1}"
SIZE_MISMATCH = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 4"
SUMMARY = (
    "2 graphs from 3 frame compiles of 2 frames; 2 graph breaks (Data-dependent branching); "
    f"1 recompile ({SIZE_MISMATCH}); compile "
)
PREFIX = "V1130 06:46:39.676000 23211 torch/_dynamo/utils.py:2350] "


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TORCH_TRACE folder of one cold run of TOY (about 20 s of compiling on this machine)."""
    root = tmp_path_factory.mktemp("compile")
    env = {**os.environ, "TORCH_TRACE": str(root / "trace"), "TORCHINDUCTOR_CACHE_DIR": str(root / "cache")}
    result = subprocess.run([sys.executable, "-c", TOY], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return root / "trace"


def the_log(folder: Path) -> Path:
    (log,) = folder.glob(LOG_GLOB)
    return log


def copy_of(trace: Path, folder: Path) -> Path:
    """A copy of the trace's log in a folder of its own, to be edited."""
    folder.mkdir()
    return Path(shutil.copy(the_log(trace), folder))


def test_a_torch_trace_folder_becomes_a_compiled_run_entry(kb: KnowledgeBase, trace: Path) -> None:
    result = run_kb("ingest", "compile-trace", str(trace), "--workload", "toy", "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert (entry.kind, entry.status, entry.title) == ("run", "completed", "Compile trace: toy")
    assert (entry.data["mode"], entry.data["backend"], entry.data["workload"]) == ("compiled", "cpu", {"name": "toy"})
    assert entry.data["provenance"] == {"source": "imported", "tool": "kb ingest compile-trace", "environment": "none"}
    section = entry.data["compile"]
    assert section["source"] == "torch_trace"
    assert section["torch"] == importlib.metadata.version("torch")
    frames = section["frames"]
    assert [(frame["id"], frame["function"]) for frame in frames] == [
        ("0/0", "toy"),
        ("1/0", "torch_dynamo_resume_in_toy_at_8"),  # the code after the break, compiled as a frame of its own
        ("0/1", "toy"),
    ]
    assert (section["frame_count"], section["graphs"]) == (3, 2)  # the resume frame returns y: no graph
    breaks = section["graph_breaks"]
    assert breaks["count"] == 2  # met again when frame 0 recompiles
    (reason,) = breaks["reasons"]
    assert reason["reason"].startswith("Data-dependent branching: Detected data-dependent branching (e.g. `if ")
    assert (reason["count"], reason["at"]) == (2, BREAK_AT)
    assert section["recompiles"] == {"count": 1, "reasons": [f"toy: {SIZE_MISMATCH}"]}
    assert frames[2]["recompile_reason"] == SIZE_MISMATCH and "recompile_reason" not in frames[0]
    assert all(frame["compile_s"] > 0 for frame in frames)
    assert section["compile_s"] == pytest.approx(sum(frame["compile_s"] for frame in frames), rel=1e-5)
    assert entry.data["timings"] == {"compile_s": section["compile_s"]}
    first = frames[0]
    assert first["backend_s"] <= first["aot_autograd_s"] <= first["dynamo_s"] == first["compile_s"]  # nested stages
    assert (first["fx_cache"], first["aot_cache"], section["cache"]) == ("miss", "miss", "fresh")
    assert section["cache_counters"] == {
        "fxgraph_hit": 0,
        "fxgraph_miss": 2,
        "fxgraph_bypass": 0,
        "aot_hit": 0,
        "aot_miss": 2,
        "aot_bypass": 0,
    }
    summary = result.stderr.splitlines()[-1]
    assert summary.startswith(SUMMARY) and summary.endswith(" s.")
    assert entry.body.startswith(summary + "\n")
    assert f"| 0/1 | toy | {frames[2]['compile_s']} | {SIZE_MISMATCH} |  |" in entry.body
    log = the_log(trace)
    attached = kb.attachments_path(entry)
    # Under 1 MiB: as it is, masked; inductor's cache keys ("cache_key_tag: ...", "key": "...") are evidence, kept.
    assert (attached / log.name).read_text() == redact_text(log.read_text()) == log.read_text()
    names = [item["path"].rsplit("/", 1)[1] for item in entry.data["attachments"]]
    if find_tlparse():
        assert sorted(names) == sorted([log.name, "tlparse.html"])
        assert "Stack trie" in (attached / "tlparse.html").read_text()
        assert "tlparse's report is attached as tlparse.html" in entry.body
    else:
        assert names == [log.name]
        assert (
            "\ntlparse is not installed, so no HTML report is attached (`pip install tlparse` adds it).\n" in entry.body
        )


def test_to_adds_the_compile_section_to_a_run_entry(kb: KnowledgeBase, trace: Path) -> None:
    write_entry(
        kb,
        "2026-05-01-toy-cpu-000001",
        recorded="2026-05-01T10:00:00Z",
        status="completed",
        backend="cpu",
        body="The toy, compiled on the CPU.\n",
    )
    result = run_kb("ingest", "compile-trace", str(trace), "--to", "2026-05-01-toy-cpu-000001")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("kb: added to 2026-05-01-toy-cpu-000001 (run)")
    entry = only_entry(kb)
    assert entry.data["compile"]["source"] == "torch_trace"
    assert entry.data["compile"]["frame_count"] == 3
    assert "timings" not in entry.data and "provenance" not in entry.data  # only the section is added
    assert entry.body.startswith("The toy, compiled on the CPU.\n\n" + SUMMARY)
    assert (kb.attachments_path(entry) / the_log(trace).name).is_file()


def test_a_truncated_last_line_is_skipped_and_said(kb: KnowledgeBase, trace: Path, tmp_path: Path) -> None:
    log = copy_of(trace, tmp_path / "killed")
    lines = log.read_bytes().count(b"\n")
    with open(log, "ab") as handle:
        handle.write(PREFIX.encode() + b'{"compilation_metrics": {"compile_id": "0/2", "co_na')  # killed mid-write
    result = run_kb("ingest", "compile-trace", str(log.parent))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1].startswith(SUMMARY)
    entry = only_entry(kb)
    assert f"\nSkipped a truncated last line (a run killed while writing?): {log.name}:{lines + 1}.\n" in entry.body
    assert entry.data["compile"]["frame_count"] == 3


def test_a_log_over_a_mebibyte_is_attached_gzipped_and_its_payloads_skipped(
    kb: KnowledgeBase, trace: Path, tmp_path: Path
) -> None:
    log = copy_of(trace, tmp_path / "long")
    code = next(line for line in log.read_text().splitlines() if '{"inductor_output_code": ' in line)
    generated = "".join(f"\t    buf{n} = empty_strided_cpu((8, 16), (16, 1), torch.float32)\n" for n in range(30_000))
    with open(log, "a") as handle:
        handle.write(f"{code}\n{generated}")  # megabytes of output code, as a large model's compile writes
    assert log.stat().st_size > 1 << 20
    result = run_kb("ingest", "compile-trace", str(log.parent))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1].startswith(SUMMARY)
    entry = only_entry(kb)
    attached = kb.attachments_path(entry) / f"{log.name}.gz"
    assert gzip.decompress(attached.read_bytes()).decode() == redact_text(log.read_text())
    assert not (kb.attachments_path(entry) / log.name).exists()


def test_bad_input_is_named_and_writes_nothing(kb: KnowledgeBase, trace: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("not a folder\n")
    junit = tmp_path / "junit" / "dedicated_log_torch_trace_x.log"
    junit.parent.mkdir()
    junit.write_text('<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest"/></testsuites>\n')
    png = tmp_path / "png" / "dedicated_log_torch_trace_x.log"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")
    garbage = copy_of(trace, tmp_path / "garbage")
    lines = garbage.read_text().splitlines(keepends=True)
    garbage.write_text("".join([*lines[:3], "this is not a trace record\n", *lines[3:]]))
    broken = copy_of(trace, tmp_path / "broken")
    broken.write_text("".join([*lines[:3], PREFIX + "{not json\n", *lines[3:]]))
    uncompiled = tmp_path / "uncompiled" / "dedicated_log_torch_trace_x.log"
    uncompiled.parent.mkdir()
    uncompiled.write_text("".join(lines[: next(i for i, line in enumerate(lines) if '{"dynamo_start": ' in line)]))
    glog = f"expected a glog prefix like '{PREFIX}' and then a JSON object"
    cases = {
        tmp_path / "missing": f"{tmp_path / 'missing'}: no such folder; give the folder TORCH_TRACE pointed at",
        tmp_path / "file.txt": f"{tmp_path / 'file.txt'}: not a folder; give the folder TORCH_TRACE pointed at",
        tmp_path / "empty": f"{tmp_path / 'empty'}: no TORCH_TRACE logs (dedicated_log_torch_trace_*.log); "
        f"run with TORCH_TRACE={tmp_path / 'empty'}",
        junit.parent: f"{junit}:1: not a structured trace record ({glog})",
        png.parent: f"{png}:1: not a structured trace record (binary data, not a text log)",
        garbage.parent: f"{garbage}:4: not a structured trace record ({glog})",
        broken.parent: f"{broken}:4: not a structured trace record (invalid JSON after the prefix: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        uncompiled.parent: f"no torch.compile events in {uncompiled.parent}; was the script compiled?",
    }
    for folder, message in cases.items():
        result = run_kb("ingest", "compile-trace", str(folder))
        assert result.returncode == 1, (folder, result.stderr)
        assert result.stderr.splitlines() == [f"kb: error: {message}"]
    assert list(kb.entries_path.iterdir()) == []
