"""ingest.signatures against the messages the stacks print.

The table's lines are copied from what PyTorch, torch_xla, the Neuron SDK, NCCL, pytest-timeout, Slurm and the
shell print (as found in their sources and in bug reports); the real logs at the end are made here, by real
processes that fail for real on this CPU-only machine: a missing module, a failed assert_close, an allocation
the CPU allocator refuses, a kernel the CPU lacks, Dynamo's graph breaks, recompiles and fullgraph errors, a
backend that runs out of memory while compiling, NaN under anomaly detection, a store that times out, a
segfault, a SIGINT and a shell reporting a SIGKILL.
"""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingest.signatures import PRECEDENCE, Finding, propose, scan_file, scan_lines

# (line, class)
# fmt: off
REAL_LINES = [
    # oom
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
     "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use.",
     "oom"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity;"
     " 14.20 GiB already allocated; 3.19 MiB free; 14.51 GiB reserved in total by PyTorch)", "oom"),
    ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
     "191.98 GiB of which 0 bytes is free.", "oom"),
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
     "tried to allocate 4611686018427387904 bytes. Error code 12 (Cannot allocate memory)", "oom"),
    ("RuntimeError: [enforce fail at alloc_cpu.cpp:72] data. DefaultCPUAllocator: not enough memory: you tried to "
     "allocate 17179869184 bytes.", "oom"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "oom"),
    ("2020-05-04 09:05:40.719332: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 2.20G "
     "(2363280384 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory", "oom"),
    ("MemoryError", "oom"),
    ("MemoryError: Unable to allocate 74.5 GiB for an array with shape (100000, 100000) and data type float64",
     "oom"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "oom"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.68 GB, other allocations: 3.95 MB, max allowed: "
     "18.13 GB). Tried to allocate 1024.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
     "upper limit for memory allocations (may cause system failure).", "oom"),
    ("2022-04-04 00:27:49.642414: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   OP_REQUIRES failed at "
     "tpu_execute_op.cc:266 : RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not "
     "possible. There are 6.78G free, 0B reserved, and 3.33G reservable.", "oom"),
    ("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in "
     "memory space vmem.", "oom"),
    ("Attempting to reserve 3.95G at the bottom of memory. That was not possible. There are 1.92G free, 0B "
     "reserved, and 1.92G reservable.;", "oom"),
    ("2025-Feb-11 14:20:32.318807   202:202   ERROR  TDRV:dmem_alloc_internal                     Failed to alloc "
     "DEVICE memory: 67108864", "oom"),
    ("2024-Jul-30 14:22:31.305961 65191:69012 ERROR   NRT:nrt_infodump                            Failure: "
     "NRT_RESOURCE in nrt_load()", "oom"),
    ("[E neuron_runtime.cpp:333] NeuronDevice::process_nrtd_response: Context=NRTD_CTX_LOAD NRTD response code "
     "'NERR_RESOURCE' (4) The runtime was unable to allocate a resource for the requested operation.", "oom"),
    ("Failed compilation with ['neuronx-cc', 'compile', '--target=trn1', '--framework=XLA']: 2024-08-20T12:12:11Z "
     "[XCG815] Estimated peak HBM usage (17.282846) exceeds 16GB. Neff won't be able to load on chip", "oom"),
    ("Killed", "oom"),
    ("./train.sh: line 12: 48213 Killed                  python train.py --batch-size 64", "oom"),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1234.batch. Some of your processes may have been "
     "killed by the cgroup out-of-memory handler.", "oom"),
    ("[Mon Jan  1 12:00:00 2024] Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:98765kB",
     "oom"),
    ("RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed.", "oom"),
    # compile_timeout
    ("RuntimeError: Inductor compile-worker future for 'triton_poi_fused_add_0' did not complete within 300s. "
     "Override with TORCHINDUCTOR_COMPILE_WORKER_WAIT_TIMEOUT=<seconds>.", "compile_timeout"),
    ("subprocess.TimeoutExpired: Command '['neuronx-cc', 'compile', '--framework=XLA', 'model.hlo_module.pb']' "
     "timed out after 3600 seconds", "compile_timeout"),
    ("ERROR: compilation timed out after 1800 s", "compile_timeout"),
    ("Compile time limit exceeded for graph SyncTensorsGraph.1234", "compile_timeout"),
    # compile_error
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:", "compile_error"),
    ("torch._inductor.exc.InductorError: CppCompileError: C++ compile error", "compile_error"),
    ("torch._dynamo.exc.InternalTorchDynamoError: AttributeError: 'NoneType' object has no attribute 'shape'",
     "compile_error"),
    ("torch._dynamo.exc.TorchRuntimeError: Failed running call_function <built-in function mul>(*(FakeTensor(..., "
     "size=(2, 3)), FakeTensor(..., size=(4,))), **{}):", "compile_error"),
    ("triton.compiler.errors.CompilationError: at 12:4:", "compile_error"),
    ("RuntimeError: neuronx-cc failed with 70", "compile_error"),
    ("ERROR [v1/executor/multiproc_executor.py:962] RuntimeError: neuronx-cc compilation failed with 70. Check "
     "compiler logs.", "compile_error"),
    ("[F134] neuronx-cc terminated abnormally - Please open a support ticket at "
     "https://github.com/aws-neuron/aws-neuron-sdk/issues/new", "compile_error"),
    ("2024-08-15 14:51:41.000622:  2216  ERROR ||NEURON_CC_WRAPPER||: Failed compilation with ['neuronx-cc', "
     "'compile', '--target=trn1']: [NLA001]  Unhandled exception with message: tensor size must be more than 0",
     "compile_error"),
    ("RuntimeError: Bad StatusOr access: INTERNAL: RunNeuronCCImpl: error condition error != 0: <class "
     "'subprocess.CalledProcessError'>: Command '' died with <Signals.SIGHUP: 1>.", "compile_error"),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Mosaic failed to compile TPU kernel", "compile_error"),
    ("RuntimeError: Compilation failed for lora with error Command '['neuronx-cc', 'compile']' returned non-zero "
     "exit status 70.", "compile_error"),
    # unsupported_op
    ("NotImplementedError: Could not run 'aten::_cudnn_ctc_loss' with arguments from the 'CPU' backend. This could "
     "be because the operator doesn't exist for this backend", "unsupported_op"),
    # This one offers the CPU as a fallback, but the op was not run at all: the error wins on its own line.
    ("NotImplementedError: The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS "
     "device. As a temporary fix, you can set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the "
     "CPU as a fallback for this op. WARNING: this will be slower than running natively on MPS.", "unsupported_op"),
    ("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'", "unsupported_op"),
    ("torch._dynamo.exc.Unsupported: Failed to trace builtin operator", "unsupported_op"),
    ("AssertionError: Neuron compile failed.  Operator prim::PythonOp is not supported", "unsupported_op"),
    ("TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please "
     "use float32 instead.", "unsupported_op"),
    # environment
    ("ModuleNotFoundError: No module named 'torch_xla'", "environment"),
    ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", "environment"),
    ("\tlibcudart.so.12 => not found", "environment"),  # what ldd says of the extension's missing library
    ("ImportError: /usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
     "_ZN3c104cuda9SetDeviceEi", "environment"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
     "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
     "environment"),
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver from http://www.nvidia.com/Download/index.aspx", "environment"),
    ("RuntimeError: CUDA driver version is insufficient for CUDA runtime version", "environment"),
    ("AssertionError: Torch not compiled with CUDA enabled", "environment"),
    # torch 2.13 CPU builds, as they say it (reproduced with torch==2.13.0+cpu).
    ("[rank1]: AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'", "environment"),
    ("AssertionError: Torch not compiled with XPU enabled", "environment"),
    ("RuntimeError: Distributed package doesn't have NCCL built in", "environment"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "environment"),
    ("RuntimeError: No HIP GPUs are available", "environment"),
    ("RuntimeError: Neuron runtime cannot be initialized; cannot determine the number of available NeuronCores",
     "environment"),
    ("2023-Sep-24 10:00:00.000000  1234:1234 ERROR  TDRV:tdrv_get_dev_info                       No neuron device "
     "available", "environment"),
    # numerical_mismatch
    ("AssertionError: Tensor-likes are not close!", "numerical_mismatch"),
    ("Mismatched elements: 1 / 3 (33.3%)", "numerical_mismatch"),
    ("AssertionError: Scalars are not close!", "numerical_mismatch"),
    ("AssertionError: Not equal to tolerance rtol=1e-07, atol=0", "numerical_mismatch"),
    ("RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.", "numerical_mismatch"),
    ("Loss is NaN, stopping training", "numerical_mismatch"),
    ("Epoch 3:  40%|████      | 200/500 [00:30<00:45, 6.61it/s, loss=nan]", "numerical_mismatch"),
    ("WARNING: NaN or Inf found in input tensor.", "numerical_mismatch"),
    ("Accuracy failed: allclose not within tol=0.001", "numerical_mismatch"),
    ("cuda train hf_Bert                          fail_accuracy", "numerical_mismatch"),
    # timeout
    ("TimeoutError: [Errno 110] Connection timed out", "timeout"),
    ("E       Failed: Timeout (>120.0s) from pytest-timeout.", "timeout"),
    ("+++++++++++++++++++++++++++++++++++ Timeout +++++++++++++++++++++++++++++++++++", "timeout"),
    ("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
     "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.", "timeout"),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     "timeout"),
    ("torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to "
     "(10.0.0.1, 29500).", "timeout"),
    ("slurmstepd: error: *** JOB 123456 ON node01 CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME LIMIT ***",
     "timeout"),
    # crash
    ("Segmentation fault (core dumped)", "crash"),
    ("Fatal Python error: Segmentation fault", "crash"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "crash"),
    ("torch.AcceleratorError: CUDA error: device-side assert triggered", "crash"),
    ("RuntimeError: DataLoader worker (pid(s) 12345) exited unexpectedly", "crash"),
    # interrupted
    ("KeyboardInterrupt", "interrupted"),
    ("Terminated", "interrupted"),
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 got signal: 15", "interrupted"),
    # cpu_fallback
    ("UserWarning: The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to "
     "run on the CPU. This may have performance implications. (Triggered internally at "
     "/Users/runner/pytorch/aten/src/ATen/mps/MPSFallback.mm:13.)", "cpu_fallback"),
    ("[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::_linalg_eigh.eigenvalues' is not currently "
     "supported on the NPU backend and will fall back to run on the CPU. This may have performance implications. "
     "(function npu_cpu_fallback)", "cpu_fallback"),
    ("Counter: aten::_local_scalar_dense", "cpu_fallback"),
    ("2021-04-19 13:28:12 10.164.0.25 [0] Counter: aten::nonzero", "cpu_fallback"),
    ("pt-xla-profiler: Op(s) not lowered: aten::_unique2,  Please open a GitHub issue with the above op lowering "
     "requests.", "cpu_fallback"),
    ("WARNING: aten::index_put falling back to CPU", "cpu_fallback"),
    ("INFO:Neuron:There are 2 ops of 1 different types in the TorchScript that are not compiled by neuron-cc: "
     "aten::embedding, (For more information see https://github.com/aws/aws-neuron-sdk)", "cpu_fallback"),
    # recompile
    ("W1110 17:56:13.321000 77473 torch/_dynamo/convert_frame.py:1550] [0/8] torch._dynamo hit "
     "config.recompile_limit (8)", "recompile"),
    ("W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8] torch._dynamo hit config.cache_size_limit"
     " (8)", "recompile"),
    ("torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True.", "recompile"),
    ("V1130 03:28:58.863000 3724 torch/_dynamo/guards.py:5396] [0/1] [__recompiles] Recompiling function forward in "
     "/home/user/model.py:12", "recompile"),
    # graph_break
    ("V1130 03:28:44.764000 3581 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] Graph break in user "
     "code at /home/user/model.py:3", "graph_break"),
    ("V1130 03:28:44.764000 3581 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] Graph Break Reason: "
     "Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):", "graph_break"),
    ("torch._dynamo.exc.Unsupported: Graph break under GenericContextWrappingVariable", "graph_break"),
]
# fmt: on

# Lines that look close to a signature but are not findings.
HARMLESS = [
    "compile_time_s: 12.3",
    "Using 'fallback' allocator config",
    "no OOM observed",
    "Epoch 1: 100%|██████████| 500/500 [01:23<00:00,  6.01it/s, loss=0.123]",
    "loss=0.123",
    "no NaN detected in gradients",
    "eval accuracy: 0.912",
    "max_memory_allocated: 10.2 GiB",
    "Killed 3 stale workers",
    "unsupported ops: 0",
    "export PYTORCH_ENABLE_MPS_FALLBACK=1",
    "torch._dynamo.config.recompile_limit = 64",
    "Graph Break Count: 0",
    "Counter: xla::add",
    "Compiler status PASS",
    "2024-12-24 10:46:40.000063:  802786  INFO ||NEURON_CACHE||: Current remaining items are 0, locked are 3, failed "
    "are 0, done are 4, total is 7",
    # What the dispatcher lists under a NotImplementedError: "fallback" there is a kernel, not the CPU.
    "PythonDispatcher: registered at /__w/pytorch/pytorch/aten/src/ATen/core/PythonFallbackKernel.cpp:196 "
    "[backend fallback]",
    # Import failures that the program shrugged off, quoted rather than raised.
    "/venv/lib/python3.11/site-packages/torch/_subclasses/functional_tensor.py:368: UserWarning: Failed to "
    "initialize NumPy: No module named 'numpy' (Triggered internally at torch/csrc/utils/tensor_numpy.cpp:84.)",
    'WARNING 01-26 10:27:28 _custom_ops.py:19] Failed to import from vllm._C with ModuleNotFoundError("No module '
    "named 'vllm._C'\")",
    "W1130 03:29:26.435000 3806 torch/_dynamo/convert_frame.py:1994] [0/8] To log all recompilation reasons, use "
    'TORCH_LOGS="recompiles".',
    "UserWarning: Timed out benchmarking choice 'triton_mm_4'. It will be ignored. Please debug the root cause in "
    "case the choice can bring perf gains.",
    "2023-Aug-01 16:14:43.0210 332066:332508 [31] bootstrap.cc:89 CCOM WARN Timeout waiting for incoming connection "
    "(waited 120 sec)",
    # torchrun stopping the other workers after one failed: the failure is elsewhere.
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1235 closing signal SIGTERM",
    '  File "/usr/lib/python3.11/site-packages/torch/_inductor/compile_fx.py", line 1234, in compile_fx',
    "    raise BackendCompilerFailed(self.compiler_fn, e) from e",
]


@pytest.mark.parametrize(("line", "expected"), REAL_LINES, ids=[f"{c}-{i}" for i, (_, c) in enumerate(REAL_LINES)])
def test_real_line_gets_its_class(line: str, expected: str) -> None:
    [finding] = scan_lines([line])
    assert (finding.failure_class, finding.line) == (expected, 1)
    assert finding.text == line.strip()[:300]


@pytest.mark.parametrize("line", HARMLESS)
def test_harmless_line_is_no_finding(line: str) -> None:
    assert scan_lines([line]) == []


def test_the_table_covers_every_class_propose_ranks() -> None:
    assert {expected for _, expected in REAL_LINES} == set(PRECEDENCE)
    assert len(REAL_LINES) >= 40 and len(HARMLESS) >= 10


def log(text: str) -> list[str]:
    return textwrap.dedent(text).strip("\n").splitlines()


INDUCTOR_OOM = log("""
    Traceback (most recent call last):
      File "/home/user/bench/run.py", line 42, in <module>
        out = compiled(x)
      File "/opt/conda/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 655, in _fn
        return fn(*args, **kwargs)
      File "/opt/conda/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 1446, in _call_user_compiler
        raise BackendCompilerFailed(self.compiler_fn, e) from e
    torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
    OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 39.39 GiB of which 1.02 GiB is free. Of the allocated memory 36.80 GiB is allocated by PyTorch, and 1.04 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.

    Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information


    You can suppress this exception and fall back to eager by setting:
        import torch._dynamo
        torch._dynamo.config.suppress_errors = True
""")  # noqa: E501


def test_inductor_failure_caused_by_oom_is_oom() -> None:
    findings = scan_lines(INDUCTOR_OOM)
    assert [(f.failure_class, f.line) for f in findings] == [("compile_error", 8), ("oom", 9)]
    chosen = propose(findings)
    assert chosen is not None
    assert (chosen.failure_class, chosen.line, chosen.signature) == ("oom", 9, "cuda-oom")
    assert chosen.text.startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.")
    assert len(chosen.text) == 300


def graph_break(step: int) -> list[str]:
    """What TORCH_LOGS=graph_breaks prints for one graph break (torch 2.13)."""
    prefix = f"V0412 10:00:0{step}.000000 4242 torch/_dynamo/symbolic_convert.py:5124] [{step}/0] [__graph_breaks]"
    return [
        f"{prefix} Graph break in user code at /home/user/model.py:{30 + step}",
        f"{prefix} Graph Break Reason: Data-dependent branching",
        f"{prefix} User code traceback:",
    ]


GRAPH_BREAKS_THEN_OOM = [
    *graph_break(0),
    *graph_break(1),
    *graph_break(2),
    "W0412 10:00:05.000000 4242 torch/_dynamo/convert_frame.py:1994] [0/8] torch._dynamo hit "
    "config.recompile_limit (8)",
    "step 10 loss=2.3012 lr=3.0e-04",
    "Traceback (most recent call last):",
    '  File "/home/user/train.py", line 88, in <module>',
    "    loss.backward()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.11 GiB "
    "of which 3.12 GiB is free.",
]


def test_many_graph_breaks_then_a_cuda_oom_is_oom() -> None:
    findings = scan_lines(GRAPH_BREAKS_THEN_OOM)
    assert [f.failure_class for f in findings] == ["graph_break"] * 6 + ["recompile", "oom"]
    assert [f.line for f in findings] == [1, 2, 4, 5, 7, 8, 10, 15]
    chosen = propose(findings)
    assert chosen is not None and (chosen.failure_class, chosen.line) == ("oom", 15)
    # Without the OOM, the first graph break is the story: a warning is told by where it began.
    warning = propose(findings[:-1])
    assert warning is not None and (warning.failure_class, warning.line) == ("recompile", 10)
    first_break = propose(findings[:6])
    assert first_break is not None and (first_break.failure_class, first_break.line) == ("graph_break", 1)


MPS_FALLBACK_ONLY = log("""
    /Users/me/proj/train.py:88: UserWarning: The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on the CPU. This may have performance implications. (Triggered internally at /Users/runner/pytorch/aten/src/ATen/mps/MPSFallback.mm:13.)
      idx = torch.nonzero(mask)
    step 100 loss=0.4312
    step 200 loss=0.3977
    done in 812.4 s
""")  # noqa: E501


def test_a_log_with_only_an_mps_fallback_warning_is_cpu_fallback() -> None:
    findings = scan_lines(MPS_FALLBACK_ONLY)
    assert [(f.failure_class, f.line, f.signature) for f in findings] == [("cpu_fallback", 1, "fall-back-to-cpu")]
    assert propose(findings) == findings[0]


NEURON_COMPILE = log("""
    2024-01-26 04:05:50.000020:  205  INFO ||NEURON_CC_WRAPPER||: Call compiler with cmd: ['neuronx-cc', '--target=trn1', 'compile', '--framework', 'XLA', '/tmp/no-user/model.hlo.pb', '--verbose=35']
    .............
    Compiler status PASS
    2024-01-26 04:09:12.000020:  205  INFO ||NEURON_CC_WRAPPER||: Call compiler with cmd: ['neuronx-cc', '--target=trn1', 'compile', '--framework', 'XLA', '/tmp/no-user/model2.hlo.pb', '--verbose=35']
    2024-01-26T04:11:02Z ERROR 85724 [neuronx-cc]: [NCC_EVRF009] Found unsupported collective operation
    2024-01-26 04:11:02.000020:  205  ERROR ||NEURON_CC_WRAPPER||: Failed compilation with ['neuronx-cc', '--target=trn1', 'compile']: [NCC_EVRF009] Found unsupported collective operation
    RuntimeError: neuronx-cc failed with 70
""")  # noqa: E501


def test_neuron_compile_failure_ends_with_its_last_line() -> None:
    findings = scan_lines(NEURON_COMPILE)
    assert [(f.failure_class, f.line) for f in findings] == [
        ("compile_error", 5),
        ("compile_error", 6),
        ("compile_error", 7),
    ]
    chosen = propose(findings)
    assert chosen is not None and (chosen.line, chosen.text) == (7, "RuntimeError: neuronx-cc failed with 70")


def test_one_finding_per_line_the_strongest() -> None:
    # An OOM reported inside a compiler error message: both match, the line is counted once, as oom.
    [finding] = scan_lines(["RuntimeError: neuronx-cc failed with 70: std::bad_alloc"])
    assert (finding.failure_class, finding.signature) == ("oom", "bad-alloc")


def test_propose_ranks_classes_and_breaks_ties_by_kind() -> None:
    def finding(failure_class: str, line: int) -> Finding:
        return Finding(failure_class, line, f"line {line}", "test")

    assert propose([]) is None
    errors = [finding("timeout", 1), finding("compile_error", 2), finding("timeout", 3), finding("compile_error", 4)]
    assert propose(errors) == errors[3]  # the strongest class; the last of it
    warnings = [finding("graph_break", 1), finding("cpu_fallback", 2), finding("cpu_fallback", 3)]
    assert propose(warnings) == warnings[1]  # the strongest class; the first of it
    assert propose([finding("other", 1), finding("graph_break", 2)]) == Finding("graph_break", 2, "line 2", "test")
    # Classes in the order of the module's rule, each one outranking all after it.
    for stronger, weaker in itertools.pairwise(PRECEDENCE):
        assert propose([finding(stronger, 1), finding(weaker, 2)]) == finding(stronger, 1)


def test_scan_lines_takes_any_iterable_of_lines() -> None:
    text = "step 1\nKilled\nstep 2\nTerminated\n"
    expected = [("oom", 2), ("interrupted", 4)]
    assert [(f.failure_class, f.line) for f in scan_lines(io.StringIO(text))] == expected
    assert [(f.failure_class, f.line) for f in scan_lines(line for line in text.splitlines())] == expected


def test_scan_file_numbers_lines_and_survives_bad_bytes_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    redraws = "".join(
        f"\rEpoch 0:  {p:2d}%|{'█' * (p // 10):10s}| {p * 50}/5000 [00:{p:02d}<01:40, 49.9it/s, loss=2.6]"
        for p in range(60)
    )
    path.write_bytes(
        b"step 1 loss=0.5\r\n"
        b"\xff\xfe garbage from a crashed writer \xc3\x28\r\n"
        + redraws.encode()
        + b"[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120,"
        b" OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.\r\n"
        + b"Killed\n"
        + b"no newline at the end: KeyboardInterrupt"
    )
    findings = scan_file(path)
    assert [(f.failure_class, f.line) for f in findings] == [("timeout", 3), ("oom", 4), ("interrupted", 5)]
    # The finding shows the progress bar's last redraw, which the message was printed onto, not the first ones.
    assert findings[0].text.startswith("Epoch 0:  59%|█████     | 2950/5000")
    assert "Watchdog caught collective operation timeout" in findings[0].text
    assert len(findings[0].text) <= 300
    check_lines(path, findings)


def test_scan_file_reads_a_huge_line_in_pieces(tmp_path: Path) -> None:
    # A progress bar that redrew itself for days without a newline: millions of characters on one line.
    path = tmp_path / "huge.log"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("step 0\n")
        handle.write("W: aten::nonzero falling back to CPU " + "\r 12%|█▏        | 1200/10000" * 100_000)
        handle.write(" [E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout\n")
        handle.write("Killed\n")
    findings = scan_file(path)
    # The fallback at its start and the timeout at its end are one line with one finding: the stronger.
    assert [(f.failure_class, f.line) for f in findings] == [("timeout", 2), ("oom", 3)]
    assert findings[0].text.endswith("Watchdog caught collective operation timeout")


def test_a_match_past_the_first_300_characters_is_kept_in_the_text() -> None:
    line = "x" * 500 + " RuntimeError: CUDA driver version is insufficient for CUDA runtime version"
    [finding] = scan_lines([line])
    assert finding.text == "CUDA driver version is insufficient for CUDA runtime version"


# --- real logs, made here by real failures -------------------------------------------------------------------

GRAPH_BREAK_THEN_OOM_IN_BACKEND = """
import torch

def f(x):
    print("a graph break")
    return x + 1

torch.compile(f, backend="eager")(torch.ones(2))

def greedy_backend(gm, example_inputs):
    torch.empty(2**62, dtype=torch.uint8)  # more than any machine has: the CPU allocator refuses
    return gm

torch.compile(lambda x: x.sin() + 1, backend=greedy_backend)(torch.ones(2))
"""

RECOMPILES = """
import torch
g = torch.compile(lambda x, i: x + i, backend="eager", dynamic=False)
for i in range(10):
    g(torch.ones(2), i)
"""

FULLGRAPH = """
import torch
def f(x):
    print("a graph break")
    return x + 1
torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
"""

STORE_TIMEOUT = """
from datetime import timedelta
import torch.distributed as dist
dist.TCPStore("127.0.0.1", 0, 2, is_master=True, timeout=timedelta(seconds=1), wait_for_workers=True)
"""

# name: (arguments after the interpreter, TORCH_LOGS)
REAL_RUNS: dict[str, tuple[list[str], str | None]] = {
    "missing-module": (["-c", "import kb_signatures_no_such_module"], None),
    "assert-close": (
        [
            "-c",
            "import torch; torch.testing.assert_close(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]))",
        ],
        None,
    ),
    "cpu-alloc": (["-c", "import torch; torch.empty(2**62, dtype=torch.uint8)"], None),
    "missing-kernel": (
        [
            "-c",
            "import torch; x = torch.randn(3, 1, 2).log_softmax(2); "
            "torch.ops.aten._cudnn_ctc_loss(x, torch.tensor([[1]]), [3], [1], 0, False, False)",
        ],
        None,
    ),
    "graph-break-then-oom": (["-c", GRAPH_BREAK_THEN_OOM_IN_BACKEND], "graph_breaks"),
    "recompiles": (["-c", RECOMPILES], "recompiles"),
    "fullgraph": (["-c", FULLGRAPH], None),
    "anomaly-nan": (
        [
            "-c",
            "import torch\nwith torch.autograd.detect_anomaly():\n"
            "    torch.tensor(-1.0, requires_grad=True).sqrt().backward()",
        ],
        None,
    ),
    "store-timeout": (["-c", STORE_TIMEOUT], None),
    "segfault": (["-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"], None),
    "sigint": (["-c", "import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(5)"], None),
}


@pytest.fixture(scope="module")
def real_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each real run's stderr in a file; the runs go at once, as each spends seconds importing torch."""
    folder = tmp_path_factory.mktemp("real-logs")
    base = {key: value for key, value in os.environ.items() if key != "TORCH_LOGS"}
    runs: dict[str, tuple[subprocess.Popen, Path]] = {}
    for name, (arguments, torch_logs) in REAL_RUNS.items():
        path = folder / f"{name}.log"
        env = base if torch_logs is None else {**base, "TORCH_LOGS": torch_logs}
        with path.open("wb") as stderr:
            runs[name] = (
                subprocess.Popen([sys.executable, *arguments], stdout=subprocess.DEVNULL, stderr=stderr, env=env),
                path,
            )
    # What a script's log says when the OOM killer (or anyone) SIGKILLs the training process it started.
    path = folder / "shell-killed.log"
    with path.open("wb") as stderr:
        script = '"$0" -c "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"; true'
        runs["shell-killed"] = (
            subprocess.Popen(["bash", "-c", script, sys.executable], stdout=subprocess.DEVNULL, stderr=stderr),
            path,
        )
    for name, (process, _) in runs.items():
        process.wait(timeout=300)
        assert name in {"recompiles", "shell-killed"} or process.returncode != 0, f"{name} did not fail"
    return {name: path for name, (_, path) in runs.items()}


def check_lines(path: Path, findings: list[Finding]) -> None:
    """Each finding's text is on the line its number names."""
    lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
    for finding in findings:
        assert finding.text and finding.text in lines[finding.line - 1], (finding, path.read_text())


@pytest.mark.parametrize(
    ("name", "failure_class", "signature"),
    [
        ("missing-module", "environment", "module-not-found"),
        ("assert-close", "numerical_mismatch", "mismatched-elements"),
        ("cpu-alloc", "oom", "cpu-alloc"),
        ("missing-kernel", "unsupported_op", "could-not-run"),
        ("graph-break-then-oom", "oom", "cpu-alloc"),
        ("recompiles", "recompile", "recompiling"),
        ("fullgraph", "unsupported_op", "dynamo-unsupported"),
        ("anomaly-nan", "numerical_mismatch", "nan-detected"),
        ("store-timeout", "timeout", "dist-timeout"),
        ("segfault", "crash", "segfault"),
        ("sigint", "interrupted", "keyboard-interrupt"),
        ("shell-killed", "oom", "oom-killed"),
    ],
)
def test_real_failure_log(real_logs: dict[str, Path], name: str, failure_class: str, signature: str) -> None:
    path = real_logs[name]
    findings = scan_file(path)
    chosen = propose(findings)
    assert chosen is not None, path.read_text()
    assert (chosen.failure_class, chosen.signature) == (failure_class, signature), (findings, path.read_text())
    check_lines(path, findings)
    # torch warns on import when NumPy is missing ("No module named 'numpy'"): a warning, not a finding.
    assert name == "missing-module" or all(f.failure_class != "environment" for f in findings)


def test_real_assert_close_reports_the_assertion_and_the_counts(real_logs: dict[str, Path]) -> None:
    findings = scan_file(real_logs["assert-close"])
    assert [f.text for f in findings] == [
        "AssertionError: Tensor-likes are not close!",
        "Mismatched elements: 1 / 3 (33.3%)",
    ]


def test_real_missing_kernel_is_not_a_fallback(real_logs: dict[str, Path]) -> None:
    text = real_logs["missing-kernel"].read_text()
    assert "[backend fallback]" in text  # the dispatcher's list of kernels follows the error
    assert {f.failure_class for f in scan_file(real_logs["missing-kernel"])} == {"unsupported_op"}


def test_real_oom_while_compiling_after_graph_breaks(real_logs: dict[str, Path]) -> None:
    findings = scan_file(real_logs["graph-break-then-oom"])
    first: dict[str, Finding] = {}
    for finding in findings:
        first.setdefault(finding.failure_class, finding)
    assert list(first) == ["graph_break", "compile_error", "oom"]  # in the order they happened
    assert first["compile_error"].text.startswith("torch._dynamo.exc.BackendCompilerFailed: backend='greedy_backend'")
    assert "DefaultCPUAllocator: can't allocate memory" in first["oom"].text


def test_real_recompiles_start_with_the_first_recompile(real_logs: dict[str, Path]) -> None:
    findings = scan_file(real_logs["recompiles"])
    assert {f.signature for f in findings} == {"recompiling", "recompile-limit"}
    chosen = propose(findings)
    assert chosen is not None and chosen == findings[0] and "Recompiling function <lambda>" in chosen.text
