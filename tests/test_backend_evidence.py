"""Backend evidence that cannot run here (Trainium, TPU, ROCm, torch_xla), read from the backends' documented
log lines, counter names, variables and folders, reproduced exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import only_entry, run_kb

from ingest.backend_evidence import (
    cache_states,
    mfu,
    neuron_compile_settings,
    neuron_from_output,
    neuron_settings,
    xla_debug_from_output,
)
from kb.store.knowledge_base import KnowledgeBase

# As the Neuron documentation and users' logs print them (NCC_WRAPPER in older releases, NEURON_CC_WRAPPER now).
NEURON_HIT = (
    "2025-07-26 00:30:52.000930: 339608 INFO ||NEURON_CC_WRAPPER||: Using a cached neff at "
    "/var/tmp/neuron-compile-cache/neuronxcc-2.19.8089.0+8ab9f450/MODULE_13537832482499839909+e30acd3a/model.neff"
)
NEURON_FAILED = (
    "INFO ||NCC_WRAPPER||: Got a cached failed neff at /var/tmp/neuron-compile-cache/neuronxcc-2.8.0.25+a3ad0f342/"
    "MODULE_12486829708343293975+d41d8cd9/model.neff. Will skip compilation, please set --retry_failed_compilation "
    "for recompilation."
)
NEURON_PATH = (
    "2024-09-23 00:08:59.000814:  27  INFO ||NEURON_CACHE||: Compile cache path: "
    "/work-dir/Mistral-7B-Instruct-v0.2/neuron-cache/"
)
# PT_XLA_DEBUG_LEVEL's analysis, as docs/source/learn/troubleshoot.md of pytorch/xla shows it (the first blocks),
# and as torch_xla/csrc/debug_util.cpp prints it (the others: "Graph Info: " with its trailing space, the causes
# it names, "Post Compilation Analysis: " sizes, a frame list cut at PT_XLA_DEBUG_MAX_FRAME).
RULE = "=" * 80
DASHES = "-" * 80
TRAIL = " "  # debug_util.cpp ends "Graph Info: " and "Python Frame Triggered Execution: " with a space
XLA_DOCUMENTED = f"""Compilation Analysis: {RULE}
Compilation Analysis: Compilation Cause
Compilation Analysis:   `torch_xla.sync()` in parallel loader at step end
Compilation Analysis: Graph Info:
Compilation Analysis:   Graph Hash: c74c3b91b855b2b123f833b0d5f86943
Compilation Analysis:   Number of Graph Inputs: 35
Compilation Analysis:   Number of Graph Outputs: 107
Compilation Analysis: Python Frame Triggered Execution:
Compilation Analysis:   sync (/workspaces/dk3/pytorch/xla/torch_xla/core/xla_model.py:1055)
Compilation Analysis:   next (/workspaces/dk3/pytorch/xla/torch_xla/distributed/parallel_loader.py:44)
Compilation Analysis:   __next__ (/workspaces/dk3/pytorch/xla/torch_xla/distributed/parallel_loader.py:32)
Compilation Analysis:   train_loop_fn (/workspaces/dk3/pytorch/xla/examples/train_decoder_only_base.py:48)
Compilation Analysis:   start_training (/workspaces/dk3/pytorch/xla/examples/train_decoder_only_base.py:65)
Compilation Analysis:   <module> (/workspaces/dk3/pytorch/xla/examples/train_decoder_only_base.py:73)
Compilation Analysis: {DASHES}
Compilation Analysis: {RULE}

Post Compilation Analysis: {RULE}
Post Compilation Analysis: Graph input size: 1.548000 GB
Post Compilation Analysis: Graph output size: 7.922460 GB
Post Compilation Analysis: Aliased Input size: 1.547871 GB
Post Compilation Analysis: Intermediate tensor size: 12.124478 GB
Post Compilation Analysis: Compiled program size: 0.028210 GB
Post Compilation Analysis: {DASHES}
Post Compilation Analysis: {RULE}

Execution Analysis: {RULE}
Execution Analysis: Execution Cause
Execution Analysis:   `torch_xla.sync()` in parallel loader at step end
Execution Analysis: Graph Info:
Execution Analysis:   Graph Hash: c74c3b91b855b2b123f833b0d5f86943
Execution Analysis:   Number of Graph Inputs: 35
Execution Analysis:   Number of Graph Outputs: 107
Execution Analysis: Python Frame Triggered Execution:
Execution Analysis:   sync (/workspaces/dk3/pytorch/xla/torch_xla/core/xla_model.py:1055)
Execution Analysis:   <module> (/workspaces/dk3/pytorch/xla/examples/train_decoder_only_base.py:73)
Execution Analysis: {DASHES}
Execution Analysis: {RULE}
"""
XLA_FROM_SOURCE = f"""
Compilation Analysis: {RULE}
Compilation Analysis: Compilation Cause
Compilation Analysis:   most likely user code trying to access tensor value before torch_xla.sync
Compilation Analysis: Graph Info:{TRAIL}
Compilation Analysis:   Graph Hash: 5b1e0ad1b2d4a7c0e31f7e3c6f0a9d21
Compilation Analysis:   Number of Graph Inputs: 2
Compilation Analysis:   Number of Graph Outputs: 1
Compilation Analysis: Python Frame Triggered Execution:{TRAIL}
Compilation Analysis:   __format__ (/usr/lib/python3/site-packages/torch/_tensor.py:1118)
Compilation Analysis:   train (/home/user/train.py:51)
Compilation Analysis:   ..........
Compilation Analysis: {DASHES}
Compilation Analysis: {RULE}
pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps
pt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps
pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps
"""
FAKE_XLA = '''
"""torch_xla.debug.metrics as documented: metric_data(name) is (TOTAL_SAMPLES, ACCUMULATOR, SAMPLES), the samples
a circular buffer of the last few (TIME, VALUE) pairs; timed metrics in nanoseconds; counters by counter_value."""
_metrics = {}
_counters = {}
KEPT = 2

def post(name, value):
    total, accumulator, samples = _metrics.get(name, (0, 0.0, []))
    _metrics[name] = (total + 1, accumulator + value, (samples + [(0, value)])[-KEPT:])

def count(name, n=1):
    _counters[name] = _counters.get(name, 0) + n

def metric_names():
    return list(_metrics)

def metric_data(name):
    return _metrics.get(name)

def counter_names():
    return list(_counters)

def counter_value(name):
    return _counters.get(name)
'''


def test_the_neuron_compile_cache_is_read_from_the_output(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text(f"{NEURON_PATH}\nstep 1\n{NEURON_HIT}\n{NEURON_HIT}\n{NEURON_FAILED}\nother line\n")
    found = neuron_from_output(log)
    assert found is not None
    assert (found["cache_hits"], found["cached_failures"]) == (2, 1)
    assert found["cache_path"] == "/work-dir/Mistral-7B-Instruct-v0.2/neuron-cache/"
    assert found["cached_failure_neffs"] == [
        "/var/tmp/neuron-compile-cache/neuronxcc-2.8.0.25+a3ad0f342/MODULE_12486829708343293975+d41d8cd9/model.neff"
    ]
    assert "--retry_failed_compilation" in found["note"]
    (tmp_path / "quiet.log").write_text("loss 1.0\n")
    assert neuron_from_output(tmp_path / "quiet.log") is None


def test_a_recorded_neuron_run_keeps_what_its_cache_said(kb: KnowledgeBase) -> None:
    script = f"print({NEURON_HIT!r}); print({NEURON_FAILED!r})"
    result = run_kb("record", "--backend", "neuron", "--", sys.executable, "-c", script)
    assert result.returncode == 0, result.stderr
    cache = only_entry(kb).data["backend_evidence"]["neuron_cache"]
    assert (cache["cache_hits"], cache["cached_failures"]) == (1, 1)


def test_neuron_settings_that_change_behaviour_are_recorded() -> None:
    env = {
        "NEURON_CC_FLAGS": "--model-type=transformer --cache_dir=/fsx/neuron-cache --retry_failed_compilation",
        "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION": "1",
        "NEURON_PARALLEL_COMPILE": "1",
    }
    assert neuron_settings(env) == {
        "compile_cache": "/fsx/neuron-cache",
        "retry_failed_compilation": True,
        "disable_fallback_execution": "1",
        "precompile_run": True,
    }
    assert neuron_settings({"NEURON_COMPILE_CACHE_URL": "s3://bucket/cache"})["compile_cache"] == "s3://bucket/cache"
    assert neuron_settings({})["compile_cache"] == "/var/tmp/neuron-compile-cache"


def test_torch_tpu_and_miopen_caches_say_whether_they_were_empty(tmp_path: Path) -> None:
    tpu, kernels, finddb = tmp_path / "tpu", tmp_path / "miopen-cache", tmp_path / "miopen-db"
    tpu.mkdir()
    kernels.mkdir()
    (kernels / "gfx942_304.ukdb").write_bytes(b"x" * 10)
    env = {
        "TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT": str(tpu),
        "MIOPEN_CUSTOM_CACHE_DIR": str(kernels),
        "MIOPEN_USER_DB_PATH": str(finddb),
    }
    states = cache_states(env, "rocm")
    assert states["torch_tpu_compilation_cache"]["state"] == "empty"
    assert states["miopen_kernel_cache"] == {"path": str(kernels), "state": "populated", "files": 1, "bytes": 10}
    assert states["miopen_find_db"]["state"] == "absent"
    assert cache_states({}, "cuda") == {}


def test_an_mfu_against_a_gpu_peak_on_trainium_is_flagged() -> None:
    # torchtitan falls back to A100 figures (312 TFLOP/s bf16) for a device it does not know.
    section = mfu(0.41, 312e12, "Trainium2")
    assert section["peak_known_for_device"] is False
    assert section["note"] == "assumed peak 3.12e+14 (A100's) is not Trainium2's 6.67e+14"
    assert mfu(0.41, 989e12, "H100 SXM")["peak_known_for_device"] is True
    assert mfu(0.41, 1e15, "TPU v9")["peak_known_for_device"] is False


@pytest.fixture
def fake_torch_xla(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "fake" / "torch_xla"
    (package / "debug").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "debug" / "__init__.py").write_text("")
    (package / "debug" / "metrics.py").write_text(FAKE_XLA)
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    import torch_xla.debug.metrics as metrics

    yield metrics
    for name in [name for name in sys.modules if name.startswith("torch_xla")]:
        del sys.modules[name]


def test_torch_xla_metrics_are_deltas_per_phase_not_totals(kb: KnowledgeBase, fake_torch_xla, tmp_path: Path) -> None:
    from ingest.pytorch import run

    metrics = fake_torch_xla
    metrics.post("CompileTime", 5e9)  # before the run: not this run's
    metrics.count("MarkStep", 3)
    with run(workload="xla-test", device="cpu", out=tmp_path / "runs") as r:
        with r.phase("load"):
            metrics.post("CompileTime", 2e9)
            metrics.post("TransferToDeviceTime", 1e6)
        for _ in range(3):
            with r.step():
                metrics.post("ExecuteTime", 3e6)
                metrics.count("MarkStep")
        metrics.count("CachedCompile", 2)
        r.mfu(0.41, peak_flops=312e12, device="Trainium2")
    evidence = only_entry(kb).data["backend_evidence"]
    assert evidence["xla_metrics"]["load"] == {
        "CompileTime": 1, "CompileTime_s": 2.0, "TransferToDeviceTime": 1, "TransferToDeviceTime_s": 0.001,
    }  # fmt: skip
    whole = evidence["xla_metrics"]["run"]
    # The buffer keeps two samples; the totals and accumulators still count all three steps.
    assert (whole["ExecuteTime"], whole["ExecuteTime_s"], whole["MarkStep"]) == (3, 0.009, 3)
    assert (whole["CompileTime"], whole["CompileTime_s"], whole["CachedCompile"]) == (1, 2.0, 2)
    assert evidence["mfu"]["peak_known_for_device"] is False


def test_torch_xla_compile_causes_are_read_per_compile(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_text("epoch 1\n" + XLA_DOCUMENTED + "loss 2.1\n" + XLA_FROM_SOURCE)
    found = xla_debug_from_output(log)
    assert found is not None
    assert (found["compiles"], found["graphs"]) == (2, 2)
    assert found["compile_causes"] == {
        "`torch_xla.sync()` in parallel loader at step end": 1,
        "most likely user code trying to access tensor value before torch_xla.sync": 1,
    }
    first, second = found["compilations"]
    assert first["graph_hash"] == "c74c3b91b855b2b123f833b0d5f86943"
    assert (first["graph_inputs"], first["graph_outputs"]) == (35, 107)
    # The frame in the user's code, past torch_xla's and torch's own.
    assert first["at"] == "train_loop_fn (/workspaces/dk3/pytorch/xla/examples/train_decoder_only_base.py:48)"
    assert len(first["frames"]) == 6
    assert first["sizes_gb"] == {
        "Graph input": 1.548, "Graph output": 7.92246, "Aliased Input": 1.547871,
        "Intermediate tensor": 12.124478, "Compiled program": 0.02821,
    }  # fmt: skip
    assert second["at"] == "train (/home/user/train.py:51)"
    assert second["frames"][0] == "__format__ (/usr/lib/python3/site-packages/torch/_tensor.py:1118)"
    assert found["execution_causes"] == {"`torch_xla.sync()` in parallel loader at step end": 1}
    assert found["warnings"] == [
        "CompileTime too frequent: 21 counts during 11 steps",
        "TransferFromDeviceTime too frequent: 11 counts during 11 steps",
    ]
    (tmp_path / "quiet.log").write_text("Execution Analysis is a phrase, not a block\n")
    assert xla_debug_from_output(tmp_path / "quiet.log") is None


def test_a_recorded_run_keeps_the_compile_causes_torch_xla_printed(kb: KnowledgeBase, tmp_path: Path) -> None:
    printed = tmp_path / "analysis.txt"
    printed.write_text(XLA_FROM_SOURCE)
    script = f"import sys; sys.stderr.write(open({str(printed)!r}).read())"
    result = run_kb("record", "--backend", "tpu", "--", sys.executable, "-c", script)
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    xla = entry.data["backend_evidence"]["xla_debug"]
    assert xla["compiles"] == 1 and xla["compilations"][0]["at"] == "train (/home/user/train.py:51)"
    shown = run_kb("show", entry.id).stdout
    assert "XLA compile causes (1)" in shown
    assert "1×  most likely user code trying to access tensor value before torch_xla.sync" in shown


# TorchNeuron's torch.compile backend reference, its table of torch.compile parameters, as published.
NEURON_MODE_DOC = (
    "Only 'default' applies. Other modes log a warning and fall back to default, so reduce-overhead, "
    "max-autotune, and max-autotune-no-cudagraphs have no effect."
)
NEURON_DYNAMIC_DOC = (
    "dynamic=True is rejected during compilation. Shapes that vary between steps run, recompiling per new shape; "
    "native dynamic shapes (a single artifact across a range of shapes) is not yet available."
)


def test_torch_compile_settings_neuron_does_not_honour_are_recorded_with_its_documented_words(
    kb: KnowledgeBase,
) -> None:
    options = ("--setting", "compile_mode=max-autotune", "--setting", "compile_dynamic=true")
    result = run_kb("record", "--backend", "neuron", *options, "--", sys.executable, "-c", "print('step 1')")
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    found = entry.data["backend_evidence"]["neuron_compile"]
    assert found["mode_ignored"] == {"mode": "max-autotune", "applied": "default", "documented": NEURON_MODE_DOC}
    assert found["dynamic_rejected"] == {"documented": NEURON_DYNAMIC_DOC}
    assert found["source"].endswith("/torch/compile/reference-torch-compile.html")
    body = " ".join(entry.body.split())
    assert (
        f"torch.compile mode `max-autotune` has no effect on Neuron, whose documentation says: “{NEURON_MODE_DOC}”"
        in body
    )
    assert f"dynamic=True; Neuron's documentation says: “{NEURON_DYNAMIC_DOC}”" in body


def test_compile_settings_neuron_honours_or_other_backends_are_left_alone() -> None:
    assert neuron_compile_settings("neuron", {"compile_mode": "default", "compile_dynamic": False}) is None
    assert neuron_compile_settings("cuda", {"compile_mode": "max-autotune", "compile_dynamic": True}) is None
    assert set(neuron_compile_settings("neuron", {"compile_dynamic": True}) or {}) == {"dynamic_rejected", "source"}
