"""`kb ingest profile` on real torch.profiler traces made here on the CPU, and a CUDA-shaped one built from them."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import only_entry, run_kb, write_entry
from data.secrets_corpus import LOOK_ALIKES, SECRETS

import ingest.importers.profile
from ingest.importers.profile import read_trace
from kb.secrets.redact import MASK, redact_text
from kb.store.knowledge_base import KnowledgeBase

ACTIVE_STEPS = 3
MANY_STEPS = 40  # enough for a plain trace over 1 MB
PARTS = {"device_compute", "memory_copy", "communication", "host", "idle"}


@dataclass
class Traces:
    small: Path  # ACTIVE_STEPS steps, under 1 MB
    large: Path  # MANY_STEPS steps, over 1 MB
    torch_self_us: dict[str, float]  # torch's own key_averages() self CPU time of the small trace, by name


def profile_steps(path: Path, active: int) -> dict[str, float]:
    """A tiny model trained for a few steps under torch.profiler's schedule; returns torch's self times."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(16, 32)
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=False, schedule=schedule(wait=1, warmup=1, active=active)
    ) as prof:
        for _ in range(active + 2):
            with record_function("forward"):
                loss = model(batch).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    prof.export_chrome_trace(str(path))
    return {event.key: event.self_cpu_time_total for event in prof.key_averages()}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Traces:
    folder = tmp_path_factory.mktemp("traces")
    small, large = folder / "trace.json", folder / "long.pt.trace.json"
    torch_self_us = profile_steps(small, ACTIVE_STEPS)
    profile_steps(large, MANY_STEPS)
    return Traces(small, large, torch_self_us)


def summary_of(trace: Path, workdir: Path) -> dict[str, Any]:
    """The profile section read in this process, to compare the CLI's entries with."""
    workdir.mkdir(exist_ok=True)
    return read_trace(trace, workdir).fields["profile"]


def complete_events(trace: Path) -> list[dict[str, Any]]:
    return [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]


def test_a_cpu_trace_becomes_a_run_entry_with_the_split_and_top_operators(
    kb: KnowledgeBase, traces: Traces, tmp_path: Path
) -> None:
    result = run_kb("ingest", "profile", str(traces.small), "--workload", "tiny", "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert result.stderr.splitlines()[:2] == [
        f"kb: recorded {entry.id} (run)",
        f"  {entry.path.relative_to(Path.cwd())}",
    ]
    assert result.stdout == f"{entry.id}\n"
    assert (entry.title, entry.kind, entry.status) == ("Profile: trace", "run", "completed")
    assert entry.data["workload"] == {"name": "tiny"} and entry.data["backend"] == "cpu"
    assert entry.data["provenance"] == {"source": "imported", "tool": "kb ingest profile", "environment": "none"}

    profile = entry.data["profile"]
    assert set(profile) == {"trace", "total_s", "split_s", "top_host_ops", "steps", "events"}
    assert profile["trace"] == "trace.json"
    assert profile["events"] == len(complete_events(traces.small))
    split = profile["split_s"]
    assert set(split) == PARTS
    assert split["device_compute"] == split["memory_copy"] == split["communication"] == 0.0
    assert profile["total_s"] > 0 and split["host"] > 0 and split["idle"] >= 0
    assert sum(split.values()) == pytest.approx(profile["total_s"], rel=1e-3)

    ops = profile["top_host_ops"]
    assert 0 < len(ops) <= 10
    assert [op["self_s"] for op in ops] == sorted((op["self_s"] for op in ops), reverse=True)
    assert all(0 <= op["self_s"] <= op["total_s"] and op["calls"] >= 1 for op in ops)
    matmuls = [op for op in ops if op["name"] in ("aten::addmm", "aten::mm", "aten::linear")]
    assert matmuls and all(op["self_s"] > 0 for op in matmuls)
    assert not any(op["name"].startswith("ProfilerStep#") for op in ops)  # steps are reported as steps
    for op in ops:  # self times agree with torch's own table of the same run
        assert op["self_s"] == pytest.approx(traces.torch_self_us[op["name"]] / 1e6, rel=2e-3, abs=1e-7)

    steps = [e["dur"] for e in complete_events(traces.small) if e["name"].startswith("ProfilerStep#")]
    assert profile["steps"]["count"] == ACTIVE_STEPS == len(steps)
    assert profile["steps"]["median_s"] == pytest.approx(sorted(steps)[1] / 1e6, rel=1e-3)
    assert entry.data["timings"]["step_s"] == {"median": profile["steps"]["median_s"], "count": ACTIVE_STEPS}

    summary = result.stderr.splitlines()[-1]
    assert summary == entry.body.splitlines()[0]
    top = ops[0]["name"]
    assert re.fullmatch(
        r"Profiled [\d.]+ (s|ms): host \d+%, device compute 0%, memory copies 0%, communication 0%, idle \d+%; "
        rf"top host op {re.escape(top)} \([\d.]+ (s|ms|µs) self\)\.",
        summary,
    ), summary
    assert f"| `{top}` |" in entry.body and "## Time split" in entry.body
    attached = kb.attachments_path(entry) / "trace.json"
    assert json.loads(attached.read_text()) == json.loads(traces.small.read_text())
    assert [a["path"].split("/", 1)[1] for a in entry.data["attachments"]] == ["trace.json"]


def test_a_gzipped_trace_is_read_by_its_magic_bytes_and_summarised_alike(
    kb: KnowledgeBase, traces: Traces, tmp_path: Path
) -> None:
    compressed = tmp_path / "rank0.pt.trace.json"  # gzipped despite the name, as a copy might be renamed
    compressed.write_bytes(gzip.compress(traces.small.read_bytes()))
    result = run_kb("ingest", "profile", str(compressed))
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    plain = summary_of(traces.small, tmp_path / "work")
    assert entry.data["profile"] == {**plain, "trace": "rank0.pt.trace.json"}
    attached = (kb.attachments_path(entry) / "rank0.pt.trace.json").read_bytes()
    assert gzip.decompress(attached) == traces.small.read_bytes()  # recompressed through the redactor: no secrets


def test_a_plain_trace_over_a_megabyte_is_attached_gzipped(kb: KnowledgeBase, traces: Traces) -> None:
    assert traces.large.stat().st_size > 1 << 20
    result = run_kb("ingest", "profile", str(traces.large))
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.title == "Profile: long.pt.trace"
    assert entry.data["profile"]["trace"] == "long.pt.trace.json.gz"
    assert entry.data["profile"]["steps"]["count"] == MANY_STEPS
    attached = kb.attachments_path(entry)
    assert sorted(p.name for p in attached.iterdir()) == ["long.pt.trace.json.gz"]
    assert gzip.decompress((attached / "long.pt.trace.json.gz").read_bytes()) == traces.large.read_bytes()


def test_secrets_in_a_gzipped_one_line_trace_are_masked_in_pieces_that_cut_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace on one line (json.dump writes one) is masked in pieces; scaled down here to cut it often."""
    monkeypatch.setattr(ingest.importers.profile, "CHUNK", 4096)
    monkeypatch.setattr(ingest.importers.profile, "MAX_VALUE_CHARS", 10_000)
    # A Cookie header is masked to the end of its line, which here is the rest of the trace: left out.
    notes = [s.text for s in SECRETS if s.id != "cookie-header"] + [a.text for a in LOOK_ALIKES]
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}] + [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": n, "dur": 1, "args": {"note": note}}
        for n, note in enumerate(notes * 20)
    ]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events})
    assert "\n" not in text and len(text) > 20 * ingest.importers.profile.MAX_VALUE_CHARS
    trace = tmp_path / "rank0.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(text.encode()))
    (tmp_path / "work").mkdir()
    attachment, name = read_trace(trace, tmp_path / "work").files[0]
    assert name == "rank0.pt.trace.json.gz" and attachment.parent == tmp_path / "work"
    masked = gzip.decompress(attachment.read_bytes()).decode()
    assert masked == redact_text(text)  # the same as masking it whole: no secret was cut in two
    assert [e["args"]["note"] for e in json.loads(masked)["traceEvents"][1:]] == [redact_text(n) for n in notes] * 20
    assert [s.id for s in SECRETS if s.probe in masked] == [] and MASK in masked


def test_to_adds_the_profile_to_the_run_it_profiled(kb: KnowledgeBase, traces: Traces, tmp_path: Path) -> None:
    run_id = "2026-11-30-llama-train-3f9a2c"
    write_entry(
        kb, run_id, title="Llama train", body="Ran on the cluster.\n", recorded="2026-11-30T10:00:00Z", status="failed"
    )
    result = run_kb("ingest", "profile", str(traces.small), "--to", run_id)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert result.stderr.startswith(f"kb: added to {run_id} (run)")
    assert entry.data["profile"] == summary_of(traces.small, tmp_path / "work")
    assert entry.status == "failed" and "timings" not in entry.data  # the run's own fields stay as they were
    assert entry.body.startswith("Ran on the cluster.\n\nProfiled ")
    assert [a["path"] for a in entry.data["attachments"]] == [f"{run_id}/trace.json"]


def test_to_an_entry_that_already_has_a_file_of_that_name_points_at_the_new_one(
    kb: KnowledgeBase, traces: Traces
) -> None:
    run_id = "2026-11-30-llama-train-4a0b3d"
    write_entry(kb, run_id, recorded="2026-11-30T10:00:00Z", status="completed")
    folder = kb.entries_path / run_id
    folder.mkdir()
    (folder / "trace.json").write_text("{}\n")  # an earlier file of the same name stays as it was
    assert run_kb("ingest", "profile", str(traces.small), "--to", run_id).returncode == 0
    entry = only_entry(kb)
    assert entry.data["profile"]["trace"] == "trace-2.json"
    assert (folder / "trace.json").read_text() == "{}\n"
    assert [a["path"] for a in entry.data["attachments"]] == [f"{run_id}/trace-2.json", f"{run_id}/trace.json"]


# A CUDA trace cannot be made here (no GPU), so this one imitates the documented shape of kineto's CUDA
# traces: the real CPU trace above, plus device events as kineto writes them (cat "kernel", "gpu_memcpy",
# "gpu_memset", "gpu_user_annotation" with pid = device and tid = stream, args as in CuptiActivity.cpp),
# cuda_runtime launches on the host thread, "ac2g" flow events between them, and deviceProperties.
# Times below are microseconds after GAP_US past the CPU trace's end, chosen so the split is known exactly.
GAP_US = 1000
GEMM = (
    "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"
    "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)"
)
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
DEVICE_EVENTS = [  # (cat, name, stream, start, duration)
    ("kernel", GEMM, 7, 10_000, 40_000),  # compute [10, 50) ms
    ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, 45_000, 10_000),  # [45, 55): [50, 55) exposed
    # no device work in [55, 60)
    ("kernel", GEMM, 7, 60_000, 20_000),  # compute [60, 80)
    ("kernel", ALL_REDUCE, 20, 70_000, 30_000),  # [70, 100): [80, 100) exposed
    ("gpu_memset", "Memset (Device)", 20, 90_000, 5_000),  # hidden behind the all-reduce
    ("gpu_user_annotation", "forward", 7, 10_000, 90_000),  # a label over the kernels, not work
]
KERNEL_ARGS = {
    "queued": 0,
    "registers per thread": 128,
    "shared memory": 49152,
    "blocks per SM": 0.484848,
    "warps per SM": 1.939394,
    "grid": [64, 1, 1],
    "block": [128, 1, 1],
    "est. achieved occupancy %": 3,
}
HOST_EVENTS = [  # (name, start, duration) on the CPU trace's thread
    ("cudaLaunchKernel", 0, 10),
    ("cudaMemcpyAsync", 20, 10),
    ("cudaLaunchKernel", 40, 10),
    ("cudaLaunchKernel", 50, 10),
    ("cudaDeviceSynchronize", 100, 99_900),  # the host waits while the device works: device time wins
]


def with_cuda_events(cpu_trace: Path, target: Path) -> None:
    trace = json.loads(cpu_trace.read_text())
    host = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op")
    pid, tid = host["pid"], host["tid"]
    base = int(max(e["ts"] + e["dur"] for e in trace["traceEvents"] if e.get("ph") == "X")) + GAP_US
    events = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    ]
    for correlation, (name, start, duration) in enumerate(HOST_EVENTS, start=900):
        args = {"External id": correlation, "cbid": 211, "correlation": correlation}
        event = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": pid, "tid": tid, "ts": base + start}
        events.append({**event, "dur": duration, "args": args})
    for correlation, (cat, name, stream, start, duration) in enumerate(DEVICE_EVENTS, start=900):
        args = {"External id": correlation, "device": 0, "context": 1, "stream": stream, "correlation": correlation}
        if cat == "kernel":
            args.update(KERNEL_ARGS)
        elif cat != "gpu_user_annotation":
            args.update({"bytes": 4194304, "memory bandwidth (GB/s)": 419.43})
        event = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": base + start, "dur": duration}
        events.append({**event, "args": args})
        flow = {"id": correlation, "cat": "ac2g", "name": "ac2g"}
        events.append({"ph": "s", **flow, "pid": pid, "tid": tid, "ts": base})
        events.append({"ph": "f", **flow, "pid": 0, "tid": stream, "ts": base + start, "bp": "e"})
    trace["traceEvents"] += events
    trace["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "numSms": 132}]
    trace["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": 2}
    target.write_text(json.dumps(trace, indent=2))


def test_device_compute_copies_and_communication_of_a_cuda_shaped_trace(
    kb: KnowledgeBase, traces: Traces, tmp_path: Path
) -> None:
    cuda_trace = tmp_path / "cuda.json"
    with_cuda_events(traces.small, cuda_trace)
    result = run_kb("ingest", "profile", str(cuda_trace))
    assert result.returncode == 0, result.stderr
    profile = only_entry(kb).data["profile"]
    cpu = summary_of(traces.small, tmp_path / "work")

    split = profile["split_s"]
    assert (split["device_compute"], split["communication"], split["memory_copy"]) == (0.06, 0.02, 0.005)
    cpu_end_to_base = profile["total_s"] - cpu["total_s"] - 0.1  # the gap before the device part, ~GAP_US
    assert cpu_end_to_base == pytest.approx(GAP_US / 1e6, abs=2e-4)
    # The launches, and the wait while no device works: [0.1, 10) and [55, 60) ms.
    assert split["host"] == pytest.approx(cpu["split_s"]["host"] + 0.01494, abs=2e-4)
    assert split["idle"] == pytest.approx(cpu["split_s"]["idle"] + cpu_end_to_base + 0.00006, abs=2e-4)
    assert sum(split.values()) == pytest.approx(profile["total_s"], rel=1e-3)
    assert profile["device_idle_s"] == pytest.approx(profile["total_s"] - 0.085, abs=1e-4)  # busy [10, 55), [60, 100)
    busy = profile["busy_s"]
    assert (busy["device_compute"], busy["communication"], busy["memory_copy"]) == (0.06, 0.03, 0.015)
    assert profile["top_device_ops"] == [
        {"name": GEMM[:119] + "…", "total_s": 0.06, "calls": 2},
        {"name": ALL_REDUCE, "total_s": 0.03, "calls": 1},
        {"name": "Memcpy HtoD (Pageable -> Device)", "total_s": 0.01, "calls": 1},
        {"name": "Memset (Device)", "total_s": 0.005, "calls": 1},
    ]
    assert profile["events"] == len(complete_events(cuda_trace))
    assert profile["steps"] == cpu["steps"]
    assert re.search(r"device compute \d+%, memory copies \d+%, communication \d+%", result.stderr)
    assert f"; top device op {GEMM[:59]}… (60 ms)." in result.stderr


def bad_inputs(small: Path, folder: Path) -> list[tuple[Path, str]]:
    """(file, the one error line kb must print) for each kind of bad input."""
    raw = small.read_bytes()
    cases: list[tuple[Path, str]] = []

    def case(name: str, content: bytes, message: str) -> None:
        path = folder / name
        path.write_bytes(content)
        cases.append((path, f"{name}: {message}"))

    cut = raw[: raw.index(b'"aten::addmm"', len(raw) // 2) + 8]  # inside a name, as a copy cut short leaves it
    try:
        json.loads(cut)
    except json.JSONDecodeError as exc:  # the standard parser says where the text stops being JSON
        where = f"line {exc.lineno} column {exc.colno} (byte {exc.pos})"
        case("cut.json", cut, f"{where}: not valid JSON ({exc.msg}); is the file complete?")
    case(
        "cut.json.gz",
        gzip.compress(raw)[:2000],
        "not a complete gzip file (it ends inside the compressed data); was it copied while being written?",
    )
    hint = "kb reads torch.profiler traces (export_chrome_trace)"
    case("metrics.json", b'{"loss": [2.3, 2.1]}', f"not a Chrome trace: no traceEvents; {hint}")
    case(
        "future.json",
        json.dumps({**json.loads(raw), "schemaVersion": 2}).encode(),
        "schemaVersion 2 is not a torch.profiler trace version kb knows (expected 1); was it written by a newer "
        "PyTorch, or by another profiler?",
    )
    chrome = {"traceEvents": [{"ph": "X", "cat": "devtools.timeline", "name": "RunTask", "ts": 1, "dur": 5}] * 2}
    case(
        "chrome.json",
        json.dumps(chrome).encode(),
        "no torch.profiler events: found devtools.timeline (2); expected categories such as cpu_op, "
        f"user_annotation, kernel, gpu_memcpy; {hint}",
    )
    case(
        "long.json",
        json.dumps({"traceEvents": [{"cat": "x" * 10_000}]}).encode(),  # found by the fuzz cases: 10 KB messages
        f"no torch.profiler events: found {'x' * 39}… (1); expected categories such as cpu_op, "
        f"user_annotation, kernel, gpu_memcpy; {hint}",
    )
    metadata_only = [e for e in json.loads(raw)["traceEvents"] if e.get("ph") == "M"]
    case(
        "empty.json",
        json.dumps({"schemaVersion": 1, "traceEvents": metadata_only}).encode(),
        'no complete events ("ph": "X"), so no time to summarise; was the profiler stopped before an active step?',
    )
    return cases


def test_bad_input_is_one_error_line_and_writes_nothing(kb: KnowledgeBase, traces: Traces, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    cases = [
        (missing, f"{missing}: no such file; give the trace torch.profiler wrote (.json or .json.gz)"),
        *bad_inputs(traces.small, tmp_path),
    ]
    for path, message in cases:
        result = run_kb("ingest", "profile", str(path), "--workload", "tiny")
        assert (result.returncode, result.stderr, result.stdout) == (1, f"kb: error: {message}\n", ""), path.name
    assert list(kb.iter_entry_paths()) == []
    assert not any(kb.entries_path.iterdir())  # no attachment folder either
