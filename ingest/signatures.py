"""Propose a failure class for a run from its log, by the messages the PyTorch stacks really print.

A signature is a regular expression for one message that CUDA/ROCm, MPS, the CPU allocator, torch.compile
(Dynamo, Inductor, Triton), torch_xla/TPU, AWS Neuron (neuronx-cc, the Neuron runtime), torch.distributed,
pytest-timeout, Slurm or the shell prints, tied to one class of the failure taxonomy (`kb.taxonomy`).
`scan_lines` and `scan_file` report the lines that match; `propose` picks the one that explains the run.

Lines are numbered by "\\n" alone, as `grep -n` and `sed -n` count them: the carriage returns a progress bar
redraws with stay inside one line, and a finding's text is the redraw that holds the match.
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
_PIECE_MAX = 1 << 20  # characters read at once: a line longer than this is scanned in pieces, in bounded memory


@dataclass(frozen=True)
class Finding:
    failure_class: str  # one of the taxonomy
    line: int  # 1-based line number in the scanned text/file
    text: str  # the matching line, stripped, cut to 300 chars
    signature: str  # short name of the signature that matched, e.g. "cuda-oom"


@dataclass(frozen=True)
class _Signature:
    name: str
    failure_class: str
    pattern: re.Pattern[str]


# (class, name, pattern). Within a class the more specific come first; across classes PRECEDENCE decides which
# of several signatures on one line is reported. Patterns see the stripped line, so ^ and $ are its ends.
_TABLE: tuple[tuple[str, str, str], ...] = (
    # --- oom
    ("oom", "cuda-oom", r"\bCUDA out of memory\b|\bCUDA error: out of memory\b"),
    ("oom", "hip-oom", r"\bHIP out of memory\b|\bHIP error: out of memory\b|\bhipErrorOutOfMemory\b"),
    ("oom", "mps-oom", r"\bMPS backend out of memory\b"),
    ("oom", "torch-oom-error", r"\bOutOfMemoryError\b"),  # torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
    ("oom", "cpu-alloc", r"\bDefaultCPUAllocator: (?:can't allocate memory|not enough memory)"),
    ("oom", "python-memoryerror", r"(?<![\w.])MemoryError(?::|$)"),
    ("oom", "bad-alloc", r"\bstd::bad_alloc\b"),
    # XLA/TPU; a bare RESOURCE_EXHAUSTED can be a quota, so it needs a word about memory too.
    ("oom", "xla-resource-exhausted",
     r"(?i:\bresource[_ ]exhausted\b).*(?i:memory|\bhbm\b|allocat|reserv)"),
    ("oom", "xla-hbm",
     r"\bAttempting to (?:reserve|allocate) \S+.*\bThat was not possible\b|\bRan out of memory in memory space \w+"
     r"|\bOut of memory while trying to allocate\b|\bExceeded hbm capacity\b"),
    # Neuron runtime status NRT_RESOURCE (4) is its failure to allocate; NERR_RESOURCE_NC (busy cores) is not.
    ("oom", "neuron-device-alloc",
     r"\bFailed to alloc(?:ate)? DEVICE memory\b|\bnrt_tensor_allocate status=4\b|\bNRT_RESOURCE\b"
     r"|\bNERR_RESOURCE\b|\bNRT_FAIL_HOST_MEM_ALLOC\b"),
    ("oom", "neuron-cc-hbm", r"\bNCC_EOOM\d+|\bEstimated peak HBM usage\b.*\bexceeds\b"),
    # The kernel's OOM killer sends SIGKILL: the shell says "Killed" (a whole line when interactive,
    # "script: line N: PID Killed  cmd" from a script), dmesg, Slurm and Kubernetes say it outright.
    ("oom", "oom-killer",
     r"^Killed$|^\S+:(?: line \d+:)? +\d+ Killed(?:\s|$)|^zsh: killed\b|\bis killed by signal: Killed\b"
     r"|\bOut of memory: Kill(?:ed)? process\b|\boom[-_]kill event|\bOOMKilled\b"),
    # --- compile_timeout
    ("compile_timeout", "compile-timed-out",
     r"(?i:\bcompil\w*\s+(?:timed\s+out|time\s*limit\s+exceeded|timeout\s+(?:exceeded|expired|reached))"
     r"|\bexceeded\s+the\s+compil\w*\s+time\s*limit|\btimed\s+out\s+(?:during|while|waiting\s+for)\s+compil)"),
    ("compile_timeout", "inductor-worker-timeout", r"\bInductor compile-worker future\b.*\bdid not complete within\b"),
    ("compile_timeout", "compiler-timed-out", r"\b(?:neuronx?-cc|ptxas|nvcc|hipcc)\b.*(?i:\btimed\s+out\b)"),
    # --- compile_error
    ("compile_error", "dynamo-backend-failed", r"\bBackendCompilerFailed:"),
    ("compile_error", "inductor-error",
     r"\b(?:InductorError|LoweringException|CppCompileError|InvalidCxxCompiler):|\bC\+\+ compile error\b"
     r"|\bA compilation subprocess exited unexpectedly\b"),
    ("compile_error", "dynamo-internal-error", r"\b(?:InternalTorchDynamoError|TorchRuntimeError):"),
    ("compile_error", "triton-compilation-error", r"\bCompilationError:"),
    ("compile_error", "neuronx-cc-failed",
     r"\bneuronx?-cc (?:compilation )?failed\b|\bneuronx?-cc terminated abnormally\b|\bFailed compilation with\b"
     r"|\bRunNeuronCCImpl: error\b|\bNCC_E[A-Z]{3}\d{3}\b|\bCompiler status (?:ERROR|FAIL)"),
    ("compile_error", "xla-compile-error",
     r"\bINTERNAL:.*(?i:compil)|\bError while lowering:|\bHLO -> LLVM IR lowering\b"),
    ("compile_error", "compilation-failed", r"(?i:\bcompilation (?:failed|failure)\b)"),
    # --- unsupported_op
    ("unsupported_op", "could-not-run", r"\bCould not run '[^']+' with arguments from the '[^']+' backend"),
    ("unsupported_op", "not-implemented-for-device", r"\bis not currently implemented for the \w+ device\b"),
    ("unsupported_op", "not-implemented",
     r"\bNotImplementedError:.*\b(?:aten|prim|torchvision)::\w+|\"\w+\" not implemented for '[\w ]+'"),
    # Dynamo raises Unsupported where it cannot trace (fatal under fullgraph=True); worded as a graph break,
    # it is one (see graph_break below).
    ("unsupported_op", "dynamo-unsupported", r"\btorch\._dynamo\.exc\.Unsupported:(?!.*(?i:graph break))"),
    ("unsupported_op", "backend-unsupported-op",
     r"(?i:\bunsupported (?:op|ops|operator|operators|operation)\b)(?!\s*[:=]\s*(?:0|none|\[\])(?:\W|$))"
     r"|(?i:\bnot (?:currently )?supported (?:on|by) (?:the )?(?:neuron|trainium|inferentia)\b"
     r"(?!.*fall(?:ing)?[\s-]?back))|\bOperator \S+ is not supported\b|\bframework doesn't support\b"),
    # --- environment (the code never got to run as meant: missing packages, drivers, devices)
    ("environment", "module-not-found", r"\bModuleNotFoundError: No module named\b"),
    ("environment", "import-name", r"\bImportError: cannot import name\b"),
    ("environment", "shared-library",
     r"\b(?:ImportError|OSError): .*\bcannot open shared object file\b|\bundefined symbol: \S+"
     r"|\bCould not load library lib\S+\.so|\blib\w+\.so[\w.]*\b.*\bnot found\b"),
    ("environment", "cuda-driver",
     r"\bCUDA driver version is insufficient\b|\bFound no NVIDIA driver on your system\b"
     r"|\bThe NVIDIA driver on your system is too old\b|\bTorch not compiled with CUDA enabled\b"
     r"|\bNo CUDA GPUs are available\b|\bno kernel image is available for execution on the device\b"
     r"|\bNVIDIA-SMI has failed\b"),
    ("environment", "rocm-driver", r"\bNo HIP GPUs are available\b|\bno ROCm-capable device is detected\b"),
    ("environment", "neuron-runtime",
     r"(?i:\bnrt_init\b.*\bfail)|\bNo neuron device available\b|\bNeuron runtime (?:cannot|could not) be initialized\b"
     r"|\bNERR_RESOURCE_NC\b|\bNeuronCore\(s\) not available\b"),
    ("environment", "tpu-init",
     r"(?i:\bTPU initialization failed\b)|\bUnable to initialize backend '\w+'|\bTPU is already in use\b"
     r"|\bFailed to get global TPU topology\b"),
    # --- numerical_mismatch
    ("numerical_mismatch", "assert-close", r"\b(?:Tensor-likes|Scalars) are not (?:close|equal)!"),
    ("numerical_mismatch", "mismatched-elements", r"^Mismatched elements: \d+ / \d+"),
    ("numerical_mismatch", "numpy-allclose", r"\bNot equal to tolerance rtol="),
    ("numerical_mismatch", "nan-loss", r"(?i:(?<![a-z])loss\b\W{0,3}(?:is\s+|=\s*|:\s*)?[+-]?(?:nan|inf)\b)"),
    ("numerical_mismatch", "nan-detected",
     r"(?i:(?<!no )\b(?:detected|found|encountered)\s+(?:a\s+)?(?:nan|inf)s?\b"
     r"|(?<!no )\b(?:nan|inf)s?(?:\s+or\s+(?:nan|inf)s?)?\s+(?:values?\s+)?(?:detected|found|encountered)\b"
     r"|\breturned (?:nan|inf) values\b)"),
    ("numerical_mismatch", "accuracy-failed", r"\bfail_accuracy\b|(?i:\baccuracy (?:check )?failed\b)"),
    # --- timeout
    ("timeout", "timeout-error", r"\bTimeoutError(?::|$)"),
    ("timeout", "pytest-timeout", r"\bFailed: Timeout \(?>\d|\+{3,} Timeout \+{3,}"),
    ("timeout", "nccl-watchdog", r"\bWatchdog caught collective operation timeout\b"),
    ("timeout", "dist-timeout", r"\bDist(?:NetworkError|StoreError|BackendError)\b.*(?i:timed out|timeout)"),
    ("timeout", "subprocess-timeout", r"\bTimeoutExpired: "),
    ("timeout", "neuron-timeout", r"\bNRT_TIMEOUT\b"),
    ("timeout", "slurm-time-limit", r"\bCANCELLED AT \S+ DUE TO TIME LIMIT\b"),
    # --- crash
    ("crash", "segfault", r"\bSegmentation fault\b|\bcore dumped\b|\bFatal Python error:"),
    ("crash", "cpp-terminate", r"\bterminate called after throwing an instance of\b"),
    ("crash", "fatal-signal", r"\bSIG(?:SEGV|ABRT|BUS|ILL|FPE)\b"),
    ("crash", "device-error",
     r"\b(?:CUDA|HIP) error: |\bdevice-side assert triggered\b|\bNRT_EXEC_(?:HW_ERR\w*|UNIT_UNRECOVERABLE)\b"),
    ("crash", "dataloader-worker", r"\bDataLoader worker \(pids?\(?s?\)? [^)]*\) exited unexpectedly\b"),
    # --- interrupted (torchrun's "Sending process N closing signal SIGTERM" is clean-up after another failure)
    ("interrupted", "keyboard-interrupt", r"\bKeyboardInterrupt\b"),
    ("interrupted", "terminated",
     r"^Terminated$|^\S+:(?: line \d+:)? +\d+ Terminated(?:\s|$)|^zsh: terminated\b"
     r"|\bSignalException: Process \d+ got signal: (?:2|15)\b|\bReceived Signals\.SIG(?:TERM|INT) death signal\b"),
    # --- cpu_fallback
    ("cpu_fallback", "fall-back-to-cpu", r"(?i:\bfall(?:s|ing)?[\s-]?back (?:to|on)(?: run on)? (?:the )?cpu\b)"),
    # torch_xla's metrics report counts each op that ran on the CPU as "Counter: aten::<op>" (lowered ops are xla::).
    ("cpu_fallback", "xla-aten-counter", r"^Counter: aten::|\bOp\(s\) not lowered: "),
    ("cpu_fallback", "aten-fallback", r"\baten::[\w.]+.*(?i:\bfall ?back\b)|(?i:\bfall ?back\b).*\baten::"),
    ("cpu_fallback", "neuron-cpu-placement",
     r"\bnot compiled by neuron-cc\b|\bNo operator is placed on Neuron runtime\b"
     r"|\bfalling back to native python function call\b"),
    # --- recompile
    ("recompile", "recompile-limit",
     r"\bhit config\.\w*(?:recompile|cache_size)_limit\b|\bFailOnRecompileLimitHit\b|\brecompile_limit reached\b"
     r"|(?i:\brecompilation cache limit\b)"),
    ("recompile", "recompiling", r"\bRecompiling function \S+ in "),
    # --- graph_break
    ("graph_break", "graph-break",
     r"\bGraph break in user code at\b|\bGraph break \(user stack suppressed\b|\bGraph Break Reason:"
     r"|\bBreak Reason \d+:"),
    ("graph_break", "dynamo-unsupported-graph-break", r"\btorch\._dynamo\.exc\.Unsupported:.*(?i:graph break)"),
)

_SIGNATURES: tuple[_Signature, ...] = tuple(
    _Signature(name, failure_class, re.compile(pattern))
    for failure_class, name, pattern in sorted(_TABLE, key=lambda row: _RANK[row[0]])  # stable: keeps table order
)
# One pass over each line with all signatures at once; only the rare line that matches is looked at closely.
_ANY = re.compile("|".join(f"(?:{pattern})" for _, _, pattern in _TABLE))


def scan_lines(lines: Iterable[str]) -> list[Finding]:
    """All findings in `lines`, in line order, at most one per line: the strongest by PRECEDENCE."""
    return _scan(enumerate(lines, start=1))


def scan_file(path: Path) -> list[Finding]:
    """All findings in the file at `path`, like `scan_lines`, read as UTF-8 (bad bytes replaced) in bounded
    memory: a line longer than a million characters is scanned in pieces, so a message that straddles two
    pieces can be missed."""
    with path.open(encoding="utf-8", errors="replace", newline="\n") as handle:
        return _scan(_pieces(handle))


def propose(findings: list[Finding]) -> Finding | None:
    """The single most telling finding, or None when there is none.

    The class is the first in PRECEDENCE that any finding has: oom > compile_timeout > compile_error >
    unsupported_op > environment > numerical_mismatch > timeout > crash > interrupted > cpu_fallback >
    recompile > graph_break, since warnings (fallbacks, recompiles, graph breaks) are weaker evidence than
    errors and an OOM or a failed compile usually drags other symptoms after it. Among findings of that
    class, in the order given (scan order): for an error class the LAST wins, as the final traceback line
    states the cause; for a warning class the FIRST wins, as that is where the trouble began. Classes
    outside PRECEDENCE rank below all of it.
    """
    if not findings:
        return None
    best = min(_RANK.get(finding.failure_class, len(PRECEDENCE)) for finding in findings)
    tied = [finding for finding in findings if _RANK.get(finding.failure_class, len(PRECEDENCE)) == best]
    return tied[0] if tied[0].failure_class in _WARNINGS else tied[-1]


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
            # Another piece of the same long line: it keeps its strongest finding.
            if _RANK[found.failure_class] < _RANK[findings[-1].failure_class]:
                findings[-1] = found
        else:
            findings.append(found)
    return findings


def _find(line: str, number: int) -> Finding | None:
    text = line.strip()
    if _ANY.search(text) is None:
        return None
    for signature in _SIGNATURES:
        match = signature.pattern.search(text)
        if match is not None:
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
