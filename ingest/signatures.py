"""Propose a failure class for a run from its log, by the messages the PyTorch stacks really print.

A signature is a regular expression for one message that CUDA/ROCm, MPS, the CPU allocator, torch.compile
(Dynamo, Inductor, Triton), torch_xla/TPU, AWS Neuron (neuronx-cc, the Neuron runtime), torch.distributed,
pytest-timeout, Slurm or the shell prints, tied to one class of the failure taxonomy (`kb.model.taxonomy`).
`scan_lines` and `scan_file` report the lines that match; `propose` picks the one that explains the run.

Lines are numbered by "\\n" alone, as `grep -n` and `sed -n` count them: the carriage returns of a progress
bar's redraws stay inside one line, and a finding's text is the redraw that holds the match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

# Strongest evidence first: a log of a failed run holds many symptoms, and the root cause should win.
PRECEDENCE: tuple[str, ...] = (
    "oom", "compile_timeout", "compile_error", "unsupported_op", "environment", "numerical_mismatch", "timeout",
    "crash", "interrupted", "cpu_fallback", "recompile", "graph_break",
)  # fmt: skip
_RANK = {failure_class: rank for rank, failure_class in enumerate(PRECEDENCE)}
# The run went on after these, so the first one is where the trouble began; after an error it ended.
_WARNINGS = frozenset({"cpu_fallback", "recompile", "graph_break"})
_TEXT_MAX = 300
_PIECE_MAX = 1 << 20  # characters read at once: a longer line is scanned in pieces, in bounded memory
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Finding:
    failure_class: str  # one of the taxonomy
    line: int  # 1-based line number in the scanned text/file
    text: str  # the matching line, stripped, cut to 300 chars
    signature: str  # short name of the signature that matched, e.g. "cuda-oom"


@dataclass(frozen=True)
class _Signature:
    failure_class: str
    name: str
    triggers: frozenset[str]
    pattern: re.Pattern[str]


# (class, name, triggers, pattern). A pattern is tried only on a line that holds one of its trigger words (as a
# whole run of letters, in any case) and every match holds one: a few dozen regular expressions on each line of a
# log of gigabytes would take hours. Patterns start with plain text where they can, which Python's re finds fast.
# Within a class the more specific come first; across classes PRECEDENCE decides which of the signatures that
# match one line is reported. Patterns see the stripped line, so ^ and $ are its ends.
# fmt: off
_TABLE: tuple[tuple[str, str, str, str], ...] = (
    # --- oom
    ("oom", "cuda-oom", "out alloc", r"CUDA out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED"),
    ("oom", "hip-oom", "out hiperroroutofmemory", r"HIP out of memory|HIP error: out of memory|hipErrorOutOfMemory"),
    ("oom", "mps-oom", "out", r"MPS backend out of memory"),
    # torch.OutOfMemoryError, torch.cuda.OutOfMemoryError, and the cause under a BackendCompilerFailed.
    ("oom", "torch-oom-error", "outofmemoryerror", r"OutOfMemoryError"),
    ("oom", "cpu-alloc", "defaultcpuallocator", r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory)"),
    ("oom", "python-memoryerror", "memoryerror", r"(?<!\w)MemoryError(?::|$)"),
    ("oom", "bad-alloc", "alloc", r"std::bad_alloc\b"),
    # XLA/TPU; a bare RESOURCE_EXHAUSTED can be a quota, so it needs a word about memory too.
    ("oom", "xla-resource-exhausted", "exhausted", r"(?i:resource[_ ]exhausted\b.*(?:memory|\bhbm\b|allocat|reserv))"),
    ("oom", "xla-hbm", "possible ran trying hbm",
     r"Attempting to (?:reserve|allocate) \S+.*\bThat was not possible\b|Ran out of memory in memory space \w+"
     r"|Out of memory while trying to allocate\b|Exceeded hbm capacity"),
    # Neuron runtime status NRT_RESOURCE (4) is its failure to allocate; NERR_RESOURCE_NC (busy cores) is not.
    ("oom", "neuron-device-alloc", "nrt nerr alloc allocate",
     r"Failed to alloc(?:ate)? DEVICE memory|nrt_tensor_allocate status=4\b|NRT_RESOURCE\b|NERR_RESOURCE\b"
     r"|NRT_FAIL_HOST_MEM_ALLOC"),
    # Any allocator that says both: "Failed to allocate N bytes ... (out of memory)".
    ("oom", "allocation-failed", "allocate", r"(?i:\b(?:failed|unable) to allocate\b.*\b(?:out of memory|oom)\b)"),
    ("oom", "neuron-cc-hbm", "eoom hbm", r"NCC_EOOM\d+|Estimated peak HBM usage\b.*\bexceeds\b"),
    # The kernel's OOM killer sends SIGKILL: the shell says "Killed" (a whole line when interactive,
    # "script: line N: PID Killed  cmd" from a script); dmesg, Slurm and Kubernetes say it outright.
    ("oom", "oom-killed", "killed oomkilled",
     r"^Killed$|^\S+:(?: line \d+:)? +\d+ Killed(?:\s|$)|^zsh: killed\b|is killed by signal: Killed\b|OOMKilled"),
    ("oom", "oom-kill-event", "out oom", r"Out of memory: Kill(?:ed)? process\b|oom[-_]kill event"),
    # --- compile_timeout
    ("compile_timeout", "compile-timed-out", "timed timeout limit",
     r"[Cc]ompil\w*\s+(?:timed\s+out|time\s+limit\s+exceeded|timeout\s+(?:exceeded|expired|reached))"
     r"|exceeded\s+the\s+compil\w*\s+time\s+limit|[Tt]imed\s+out\s+(?:during|while|waiting\s+for)\s+compil"),
    ("compile_timeout", "inductor-worker-timeout", "inductor",
     r"Inductor compile-worker future\b.*\bdid not complete within\b"),
    ("compile_timeout", "compiler-timed-out", "timed", r"\b(?:neuronx?-cc|ptxas|nvcc|hipcc)\b.*(?i:\btimed\s+out\b)"),
    # --- compile_error
    ("compile_error", "dynamo-backend-failed", "backendcompilerfailed", r"BackendCompilerFailed:"),
    ("compile_error", "inductor-error",
     "inductorerror loweringexception cppcompileerror invalidcxxcompiler compile unexpectedly",
     r"(?:InductorError|LoweringException|CppCompileError|InvalidCxxCompiler):|C\+\+ compile error"
     r"|A compilation subprocess exited unexpectedly"),
    ("compile_error", "dynamo-internal-error", "internaltorchdynamoerror torchruntimeerror",
     r"(?:InternalTorchDynamoError|TorchRuntimeError):"),
    ("compile_error", "triton-compilation-error", "compilationerror", r"CompilationError:"),
    ("compile_error", "neuronx-cc-failed", "neuronx neuron compilation runneuronccimpl ncc compiler",
     r"neuronx?-cc (?:(?:compilation )?failed|terminated abnormally)|Failed compilation with|RunNeuronCCImpl: error"
     r"|NCC_E[A-Z]{3}\d{3}\b|Compiler status (?:ERROR|FAIL)"),
    ("compile_error", "xla-compile-error", "internal lowering",
     r"INTERNAL:.*(?i:compil)|Error while lowering:|HLO -> LLVM IR lowering"),
    ("compile_error", "compilation-failed", "compilation", r"[Cc]ompilation [Ff]ail(?:ed|ure)|COMPILATION FAIL"),
    ("compile_error", "tpu-inductor-refused", "experimental",
     r"backend='inductor'\) on TPU is experimental and does not yet have full TPU support"),
    # --- unsupported_op
    ("unsupported_op", "could-not-run", "could", r"Could not run '[^']+' with arguments from the '[^']+' backend"),
    ("unsupported_op", "not-implemented-for-device", "implemented", r"is not currently implemented for the \w+ device"),
    # TorchTPU with its CPU fallback off (the default); on, the same operator logs "... Falling back to CPU".
    ("unsupported_op", "tpu-missing-op", "implemented",
     r"operator '[^']+' is not implemented for \w+\. Please file a feature request"),
    # TorchTPU's device calls refuse callers outside torch ("Use torch.accelerator.<name> instead.").
    ("unsupported_op", "tpu-internal-api", "internal", r"is internal to TorchTPU and can only be called by"),
    ("unsupported_op", "not-implemented", "notimplementederror implemented",
     r"NotImplementedError:.*\b(?:aten|prim|torchvision)::\w+|\"\w+\" not implemented for '[\w ]+'"),
    # Dynamo raises Unsupported where it cannot trace (an error under fullgraph=True); worded as a graph
    # break, it counts as one (see graph_break below).
    ("unsupported_op", "dynamo-unsupported", "unsupported", r"torch\._dynamo\.exc\.Unsupported:(?!.*(?i:graph break))"),
    ("unsupported_op", "backend-unsupported-op", "unsupported supported support",
     r"(?i:\bunsupported (?:op|ops|operator|operators|operation)\b)(?!\s*[:=]\s*(?:0|none|\[\])(?:\W|$))"
     r"|(?i:\bnot (?:currently )?supported (?:on|by) (?:the )?(?:neuron|trainium|inferentia)\b"
     r"(?!.*fall(?:ing)?[\s-]?back))|Operator \S+ is not supported\b|framework doesn't support\b"),
    # --- environment: the code never ran as meant (missing packages, libraries, drivers, devices)
    ("environment", "module-not-found", "modulenotfounderror", r"ModuleNotFoundError: No module named\b"),
    ("environment", "import-name", "importerror", r"ImportError: cannot import name\b"),
    ("environment", "shared-library", "shared symbol library so",
     r"ImportError: .*\bcannot open shared object file\b|OSError: .*\bcannot open shared object file\b"
     r"|undefined symbol: \S+|Could not load library lib\S+\.so|lib\w+\.so[\w.]*\b.*\bnot found\b"),
    ("environment", "cuda-driver", "driver gpus image smi",
     r"CUDA driver version is insufficient|Found no NVIDIA driver on your system"
     r"|The NVIDIA driver on your system is too old|No CUDA GPUs are available"
     r"|no kernel image is available for execution on the device|NVIDIA-SMI has failed"),
    # A CPU build of torch asked for CUDA: torch 2.13's torch.cuda.set_device() reaches the missing binding
    # ("module 'torch._C' has no attribute '_cuda_setDevice'"), other calls assert; XPU, MPS likewise.
    ("environment", "not-compiled-with", "attribute compiled",
     r"module 'torch\._C' has no attribute '_(?:cuda|cudart|nccl|xpu|mps)\w*'|Torch not compiled with \w+ enabled"),
    ("environment", "nccl-missing", "nccl gpus",
     r"Distributed package doesn't have NCCL built in|ProcessGroupNCCL is only supported with GPUs, no GPUs found"),
    ("environment", "rocm-driver", "gpus capable", r"No HIP GPUs are available|no ROCm-capable device"),
    ("environment", "neuron-runtime", "nrt neuron nerr neuroncore",
     r"nrt_init\b.*(?i:\bfail)|No neuron device available|Neuron runtime (?:cannot|could not) be initialized"
     r"|NERR_RESOURCE_NC\b|NeuronCore\(s\) not available"),
    # A device type that no loaded backend registered: torch.device("tpu") where TorchTPU found no TPU.
    ("environment", "unknown-device-type", "expected",
     r"Expected one of .*device type at start of device string: \w+"),
    ("environment", "tpu-lock-held", "lockfile use",
     r"accessing libtpu multi-process lockfile|The TPU is already in use by process with pid|TPU is already in use"),
    ("environment", "tpu-init", "tpu initialize pjrt jellyfish compilation",
     r"TPU initialization failed|Unable to initialize backend '\w+'|Failed to get global TPU topology"
     r"|failed to retrieve the PjRt client|failed to initialize the PjRt plugin|No jellyfish device found"
     r"|No TPU devices found after filtering|Failed to create default compilation context"),
    ("environment", "openvino-device", "available",
     r"Specified device \w+ is not in the list of OpenVINO Available Devices"),
    # --- numerical_mismatch
    ("numerical_mismatch", "assert-close", "close equal", r"(?:Tensor-likes|Scalars) are not (?:close|equal)!"),
    ("numerical_mismatch", "mismatched-elements", "mismatched", r"^Mismatched elements: \d+ / \d+"),
    ("numerical_mismatch", "numpy-allclose", "tolerance", r"Not equal to tolerance rtol="),
    ("numerical_mismatch", "nan-loss", "nan inf",
     r"(?i:(?<![a-z])loss\b\W{0,3}(?:is\s+|=\s*|:\s*)?[+-]?(?:nan|inf)\b)"),
    ("numerical_mismatch", "nan-detected", "nan nans inf infs",
     r"(?i:(?<!no )\b(?:detected|found|encountered)\s+(?:a\s+)?(?:nan|inf)s?\b"
     r"|(?<!no )\b(?:nan|inf)s?(?:\s+or\s+(?:nan|inf)s?)?\s+(?:values?\s+)?(?:detected|found|encountered)\b"
     r"|\breturned (?:nan|inf) values\b)"),
    ("numerical_mismatch", "accuracy-failed", "fail failed", r"fail_accuracy\b|[Aa]ccuracy (?:check )?failed\b"),
    # --- timeout
    ("timeout", "timeout-error", "timeouterror", r"TimeoutError(?::|$)"),
    ("timeout", "pytest-timeout", "timeout", r"Failed: Timeout \(?>\d|\+\+\+ Timeout \+\+\+"),
    ("timeout", "nccl-watchdog", "watchdog", r"Watchdog caught collective operation timeout"),
    ("timeout", "dist-timeout", "distnetworkerror diststoreerror distbackenderror",
     r"Dist(?:NetworkError|StoreError|BackendError)\b.*(?i:timed out|timeout)"),
    ("timeout", "subprocess-timeout", "timeoutexpired", r"TimeoutExpired: "),
    ("timeout", "neuron-timeout", "timeout", r"NRT_TIMEOUT\b"),
    ("timeout", "slurm-time-limit", "cancelled", r"CANCELLED AT \S+ DUE TO TIME LIMIT"),
    # --- crash
    ("crash", "segfault", "segmentation dumped fatal", r"Segmentation fault|core dumped|Fatal Python error:"),
    ("crash", "cpp-terminate", "terminate", r"terminate called after throwing an instance of"),
    ("crash", "fatal-signal", "sigsegv sigabrt sigbus sigill sigfpe", r"SIG(?:SEGV|ABRT|BUS|ILL|FPE)\b"),
    ("crash", "device-error", "cuda hip assert exec",
     r"CUDA error: |HIP error: |device-side assert triggered|NRT_EXEC_(?:HW_ERR\w*|UNIT_UNRECOVERABLE)"),
    ("crash", "dataloader-worker", "dataloader", r"DataLoader worker \(pids?\(?s?\)? [^)]*\) exited unexpectedly"),
    # --- interrupted (torchrun's "Sending process N closing signal SIGTERM" is clean-up after another failure)
    ("interrupted", "keyboard-interrupt", "keyboardinterrupt", r"KeyboardInterrupt"),
    ("interrupted", "terminated", "terminated signalexception death",
     r"^Terminated$|^\S+:(?: line \d+:)? +\d+ Terminated(?:\s|$)|^zsh: terminated\b"
     r"|SignalException: Process \d+ got signal: (?:2|15)\b|Received Signals\.SIG(?:TERM|INT) death signal"),
    # --- cpu_fallback
    ("cpu_fallback", "fall-back-to-cpu", "fall fallback falling falls",
     r"(?i:\bfall(?:s|ing)?[\s-]?back (?:to|on)(?: run on)? (?:the )?cpu\b)"),
    # torch_xla's metrics report counts each op run on the CPU as "Counter: aten::<op>" (lowered ones are xla::).
    ("cpu_fallback", "xla-aten-counter", "counter lowered", r"Counter: aten::|Op\(s\) not lowered: "),
    ("cpu_fallback", "aten-fallback", "fall fallback",
     r"aten::[\w.]+.*(?i:\bfall ?back\b)|(?i:\bfall ?back\b).*aten::"),
    ("cpu_fallback", "neuron-cpu-placement", "compiled placed native",
     r"not compiled by neuron-cc|No operator is placed on Neuron runtime|falling back to native python function call"),
    # --- recompile
    ("recompile", "recompile-limit", "hit failonrecompilelimithit recompile recompilation",
     r"hit config\.\w*(?:recompile|cache_size)_limit\b|FailOnRecompileLimitHit|recompile_limit reached"
     r"|[Rr]ecompilation cache limit"),
    ("recompile", "recompiling", "recompiling", r"Recompiling function \S+ in "),
    # --- graph_break
    ("graph_break", "graph-break", "graph break",
     r"Graph break in user code at|Graph break \(user stack suppressed|Graph Break Reason:|Break Reason \d+:"),
    ("graph_break", "dynamo-unsupported-graph-break", "unsupported",
     r"torch\._dynamo\.exc\.Unsupported:.*(?i:graph break)"),
)
# fmt: on

# What a person needs to know about a signature's failure, where its message alone does not say.
EXPLANATIONS = {
    "unknown-device-type": (
        "This torch knows no such device type: its backend did not load (no such device on this host, or its "
        "package is not installed). TorchTPU registers `tpu` only where it finds a TPU."
    ),
    "tpu-init": (
        "The TPU runtime (libtpu) did not start: no TPU was found, or its topology could not be read "
        "(off Google Cloud, set TPU_SKIP_MDS_QUERY=1 with TPU_ACCELERATOR_TYPE, TPU_WORKER_ID and "
        "TPU_WORKER_HOSTNAMES)."
    ),
    "tpu-lock-held": (
        "Another process holds the TPU through libtpu's lock file: stop it, or remove /tmp/libtpu_lockfile "
        "when no process uses the TPU."
    ),
    "tpu-missing-op": (
        "The backend has no kernel for this operator and its CPU fallback is off (TorchTPU's default), so the "
        "call failed instead of running on the CPU."
    ),
    "tpu-internal-api": (
        "TorchTPU refuses this device call from outside torch: call the torch.accelerator function the message "
        "names (TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS=1 turns the refusal into a warning)."
    ),
    "tpu-inductor-refused": (
        "TorchTPU does not compile TPU tensors with Inductor: pass backend='tpu', or no backend, to torch.compile."
    ),
    "openvino-device": (
        "OpenVINO has no such device here, so it compiled nothing: every partition ran in plain PyTorch."
    ),
}

_SIGNATURES: tuple[_Signature, ...] = tuple(
    _Signature(failure_class, name, frozenset(triggers.split()), re.compile(pattern))
    for failure_class, name, triggers, pattern in sorted(_TABLE, key=lambda row: _RANK[row[0]])  # stable sort
)
_TRIGGERS = frozenset().union(*(signature.triggers for signature in _SIGNATURES))
# For each trigger word, the positions in _SIGNATURES of the signatures it lets through.
_BY_WORD = {word: tuple(i for i, sig in enumerate(_SIGNATURES) if word in sig.triggers) for word in _TRIGGERS}


def scan_lines(lines: Iterable[str]) -> list[Finding]:
    """All findings in `lines`, in line order, at most one per line: the strongest by PRECEDENCE."""
    return _scan(enumerate(lines, start=1))


def scan_file(path: Path) -> list[Finding]:
    """All findings in the file at `path`, as `scan_lines` gives them, read as UTF-8 (bad bytes replaced) in
    bounded memory: a line of over a million characters is scanned in pieces, so a message that straddles
    two pieces can be missed."""
    with path.open(encoding="utf-8", errors="replace", newline="\n") as handle:
        return _scan(_pieces(handle))


def propose(findings: list[Finding]) -> Finding | None:
    """The single most telling finding, or None when there is none.

    The class is the first in PRECEDENCE that any finding has: oom > compile_timeout > compile_error >
    unsupported_op > environment > numerical_mismatch > timeout > crash > interrupted > cpu_fallback >
    recompile > graph_break, because warnings (fallbacks, recompiles, graph breaks) are weaker evidence than
    errors, and an OOM or a failed compile drags other symptoms after it. Among the findings of that class,
    in the order given (scan order): for an error class the LAST wins, as the final traceback line states
    the cause; for a warning class the FIRST wins, as that is where the trouble began. A class outside
    PRECEDENCE ranks below all of it.
    """
    if not findings:
        return None
    best = min(_RANK.get(finding.failure_class, len(PRECEDENCE)) for finding in findings)
    tied = [finding for finding in findings if _RANK.get(finding.failure_class, len(PRECEDENCE)) == best]
    return tied[0] if tied[0].failure_class in _WARNINGS else tied[-1]


def explain(finding: Finding) -> str | None:
    """What a person needs to know about this finding's failure, where kb knows more than its message says."""
    return EXPLANATIONS.get(finding.signature)


def _pieces(handle: TextIO) -> Iterator[tuple[int, str]]:
    """The file's lines with their numbers, each line in pieces of at most _PIECE_MAX characters."""
    number = 1
    while piece := handle.readline(_PIECE_MAX):
        yield number, piece
        if piece.endswith("\n"):
            number += 1


def _scan(numbered: Iterable[tuple[int, str]]) -> list[Finding]:
    findings: list[Finding] = []
    for number, text in numbered:
        found = _find(text, number)
        if found is None:
            continue
        if findings and findings[-1].line == number:
            # Another piece of the same long line: the line keeps its strongest finding.
            if _RANK[found.failure_class] < _RANK[findings[-1].failure_class]:
                findings[-1] = found
        else:
            findings.append(found)
    return findings


def _find(line: str, number: int) -> Finding | None:
    text = line.strip()
    words = _TRIGGERS.intersection(_WORD.findall(text.lower()))
    if not words:
        return None  # the common case, decided without any regular expression
    for index in sorted({index for word in words for index in _BY_WORD[word]}):  # in PRECEDENCE order
        signature = _SIGNATURES[index]
        if match := signature.pattern.search(text):
            return Finding(signature.failure_class, number, _excerpt(text, match), signature.name)
    return None


def _excerpt(text: str, match: re.Match[str]) -> str:
    """The redraw (carriage-return segment) of the line that holds the match, stripped and cut to _TEXT_MAX;
    it starts at the match where the match would not fit otherwise."""
    start = text.rfind("\r", 0, match.start()) + 1
    if match.end() - start > _TEXT_MAX:
        start = match.start()
    end = text.find("\r", match.end())
    return text[start : len(text) if end == -1 else end].strip()[:_TEXT_MAX]
