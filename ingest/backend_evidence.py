"""What the backends' own logs and caches say about a run, torch-free: Neuron, TorchTPU, ROCm, and MFU's assumption.

None of this can run on the machines kb is tested on: each reader follows the backend's documented log lines,
environment variables and folders, reproduced exactly in the tests.

- Neuron's compile cache logs one line per graph it looks up. "Using a cached neff at PATH" is a hit; "Got a
  cached failed neff at PATH. Will skip compilation, please set --retry_failed_compilation for recompilation."
  is a failed compile kept in the cache, which is not retried unless NEURON_CC_FLAGS holds
  `--retry_failed_compilation`; "Compile cache path: PATH" names the cache in use. The cache is set by
  `--cache_dir` in NEURON_CC_FLAGS or by NEURON_COMPILE_CACHE_URL (default /var/tmp/neuron-compile-cache).
  A run under `neuron_parallel_compile` (NEURON_PARALLEL_COMPILE=1) only extracts and compiles graphs: its
  timings are not results.
- TorchTPU keeps compiled programs under TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT; whether it was empty when
  the run began says whether its first steps compiled.
- torch_xla, with PT_XLA_DEBUG_LEVEL=1 (or 2, which adds "Execution Analysis: " blocks), prints a block per
  compile to stderr (or to PT_XLA_DEBUG_FILE), every line prefixed "Compilation Analysis: ": a rule of "=", then
  "Compilation Cause", the cause indented by two spaces, "Graph Info: " with "Graph Name: " (when set), "Graph
  Hash: ", "Number of Graph Inputs: ", "Number of Graph Outputs: ", then "Python Frame Triggered Execution: "
  with frames as "  function (file:line)", closed by rules of "-" and "=". "Post Compilation Analysis: " blocks
  give the compiled graph's sizes in GB, and "pt-xla-profiler: " lines the metrics' own warnings ("CompileTime
  too frequent: 21 counts during 11 steps"). Text as in torch_xla/csrc/debug_util.cpp and
  docs/source/learn/troubleshoot.md.
- TorchNeuron's torch.compile backend documents two settings it does not honour: a `mode` other than default
  ("Other modes log a warning and fall back to default") and `dynamic=True` ("rejected during compilation").
  The documentation gives neither the warning's nor the error's text, so the output is not searched for them:
  a run that states these settings (`compile_mode`, `compile_dynamic`) on a Neuron backend gets the
  documented sentences as warnings.
- ROCm's MIOpen keeps its kernel cache (MIOPEN_CUSTOM_CACHE_DIR, default ~/.cache/miopen) and its find-db of
  tuned kernels (MIOPEN_USER_DB_PATH, default ~/.config/miopen); empty ones make the first iterations slow.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NEURON_DEFAULT_CACHE = "/var/tmp/neuron-compile-cache"
EXAMPLES = 5
_NEFF_HIT = re.compile(r"Using a cached neff at (\S+?)\.?(?:\s|$)")
_NEFF_FAILED = re.compile(r"Got a cached failed neff at (\S+?)\.?(?:\s|$)")
_CACHE_PATH = re.compile(r"Compile cache path: (\S+)")
_XLA_PREFIXES = (
    ("post", "Post Compilation Analysis: "),
    ("unexpected", "Unexpected Execution Analysis: "),
    ("compile", "Compilation Analysis: "),
    ("execution", "Execution Analysis: "),
)
_XLA_PROFILER = "pt-xla-profiler: "
_XLA_GRAPH_FIELDS = {
    "Graph Name": "graph_name",
    "Graph Hash": "graph_hash",
    "Number of Graph Inputs": "graph_inputs",
    "Number of Graph Outputs": "graph_outputs",
}
_XLA_SIZE = re.compile(r"(Graph input|Graph output|Aliased Input|Intermediate tensor|Compiled program) size: (\S+)")
_LIBRARY_FRAME = re.compile(r"/torch(?:_xla)?/")
XLA_COMPILES_KEPT = 50
# TorchNeuron's "torch.compile backend reference", its table of torch.compile parameters, quoted exactly.
NEURON_COMPILE_REFERENCE = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html"
)
NEURON_COMPILE_MODE = (
    "Only 'default' applies. Other modes log a warning and fall back to default, so reduce-overhead, "
    "max-autotune, and max-autotune-no-cudagraphs have no effect."
)
NEURON_COMPILE_DYNAMIC = (
    "dynamic=True is rejected during compilation. Shapes that vary between steps run, recompiling per new shape; "
    "native dynamic shapes (a single artifact across a range of shapes) is not yet available."
)
# Peak dense bf16 FLOP/s per device that MFU figures are commonly computed against (vendor data sheets).
KNOWN_PEAK_FLOPS = {
    "A100": 312e12,
    "H100 SXM": 989e12,
    "H100 PCIe": 756e12,
    "H200": 989e12,
    "MI300X": 1307e12,
    "Trainium2": 667e12,
    "TPU v5p": 459e12,
    "TPU v6e": 918e12,
}


def neuron_from_output(path: Path) -> dict[str, Any] | None:
    """The Neuron compile cache as the run's output saw it: hits, cached failures, the cache path; None when
    the output says nothing of it."""
    hits: list[str] = []
    failed: list[str] = []
    paths: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if "neff" not in line and "Compile cache path" not in line:
                continue  # the common case, decided without a regular expression
            if found := _NEFF_HIT.search(line):
                hits.append(found.group(1))
            elif found := _NEFF_FAILED.search(line):
                failed.append(found.group(1))
            elif found := _CACHE_PATH.search(line):
                paths.append(found.group(1))
    if not (hits or failed or paths):
        return None
    section: dict[str, Any] = {"cache_hits": len(hits), "cached_failures": len(failed)}
    if paths:
        section["cache_path"] = paths[-1]
    if failed:
        section["cached_failure_neffs"] = failed[:EXAMPLES]
        section["note"] = (
            "A compile that failed before is kept in the cache and skipped, not retried, unless NEURON_CC_FLAGS "
            "holds --retry_failed_compilation: this run met the old failure, not a new one."
        )
    return section


def xla_debug_from_output(path: Path) -> dict[str, Any] | None:
    """What PT_XLA_DEBUG_LEVEL's analysis printed: each compile with its cause, graph and the Python frame that
    triggered it, the causes counted, executions by cause (level 2), and the metrics' own warnings; None when
    the output holds none of it."""
    compiles: list[dict[str, Any]] = []
    executions: dict[str, int] = {}
    warnings: dict[str, None] = {}
    block: dict[str, Any] | None = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if "Analysis: " not in line and _XLA_PROFILER not in line:
                continue  # the common case, decided by one search
            if _XLA_PROFILER in line:
                warnings[line.split(_XLA_PROFILER, 1)[1].strip()] = None
                continue
            kind, text = _xla_analysis(line)
            if kind is None:
                continue
            if kind == "post":
                if compiles and (found := _XLA_SIZE.match(text)):
                    compiles[-1].setdefault("sizes_gb", {})[found.group(1)] = _number(found.group(2))
                continue
            if text.startswith("=="):  # a block opens, or closes after its rule of "-"
                if block is not None:
                    _close_xla_block(block, compiles, executions)
                ends = block is not None and block["kind"] == kind and block.get("expect") == "end"
                block = None if ends else {"kind": kind, "frames": []}
            elif block is not None and block["kind"] == kind:
                _read_xla_line(block, text)
    if block is not None:
        _close_xla_block(block, compiles, executions)
    if not (compiles or executions or warnings):
        return None
    causes: dict[str, int] = {}
    for item in compiles:
        causes[item["cause"]] = causes.get(item["cause"], 0) + 1
    section: dict[str, Any] = {"compiles": len(compiles), "compile_causes": causes}
    if compiles:
        section["graphs"] = len({item.get("graph_hash") for item in compiles})
        section["compilations"] = compiles[:XLA_COMPILES_KEPT]
    if executions:
        section["executions"] = sum(executions.values())
        section["execution_causes"] = executions
    if warnings:
        section["warnings"] = list(warnings)[:XLA_COMPILES_KEPT]
    return section


def _xla_analysis(line: str) -> tuple[str | None, str]:
    """Which analysis a line belongs to ("compile", "execution", "unexpected", "post") and its text after the
    prefix; (None, "") for any other line. "Post Compilation Analysis: " holds the compile prefix: tried first."""
    for kind, prefix in _XLA_PREFIXES:
        at = line.find(prefix)
        if at >= 0:
            return kind, line[at + len(prefix) :].rstrip("\r\n")
    return None, ""


def _read_xla_line(block: dict[str, Any], text: str) -> None:
    stripped = text.strip()
    if stripped in ("Compilation Cause", "Execution Cause"):
        block["expect"] = "cause"
    elif stripped == "Graph Info:":
        block["expect"] = "graph"
    elif stripped == "Python Frame Triggered Execution:":
        block["expect"] = "frames"
    elif stripped.startswith("--") and set(stripped) == {"-"}:
        block["expect"] = "end"
    elif block.get("expect") == "cause" and "cause" not in block:
        block["cause"] = stripped
    elif block.get("expect") == "graph" and ": " in stripped:
        name, value = stripped.split(": ", 1)
        key = _XLA_GRAPH_FIELDS.get(name)
        if key is not None:
            block[key] = int(value) if key != "graph_hash" and value.isdigit() else value
    elif block.get("expect") == "frames" and stripped and stripped != "..........":
        block["frames"].append(stripped)


def _close_xla_block(block: dict[str, Any], compiles: list[dict[str, Any]], executions: dict[str, int]) -> None:
    """Keep a block read (one cut off by the end of the output or by another block included), once."""
    cause = block.pop("cause", None)
    if not cause:
        return
    if block["kind"] == "compile":
        frames = block["frames"]
        # The frame in the user's code: the first outside torch_xla's and torch's own files, else the first.
        at = next((frame for frame in frames if not _LIBRARY_FRAME.search(frame)), frames[0] if frames else None)
        keys = ("graph_name", "graph_hash", "graph_inputs", "graph_outputs")
        compiles.append({"cause": cause, **{key: block[key] for key in keys if key in block},
                         **({"at": at, "frames": frames} if frames else {})})  # fmt: skip
    else:
        label = cause if block["kind"] == "execution" else f"unexpected: {cause}"
        executions[label] = executions.get(label, 0) + 1


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text.strip()  # "Unknown" where the runtime gave no size


def neuron_compile_settings(backend: Any, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """What TorchNeuron documents of the run's torch.compile settings (`compile_mode`, `compile_dynamic`) that it
    does not honour, quoted; None on another backend or with settings it honours."""
    if "neuron" not in str(backend or "").lower():
        return None
    found: dict[str, Any] = {}
    mode = settings.get("compile_mode")
    if mode not in (None, "", "default"):
        found["mode_ignored"] = {"mode": str(mode), "applied": "default", "documented": NEURON_COMPILE_MODE}
    if str(settings.get("compile_dynamic")).lower() in ("true", "1", "yes"):
        found["dynamic_rejected"] = {"documented": NEURON_COMPILE_DYNAMIC}
    return {**found, "source": NEURON_COMPILE_REFERENCE} if found else None


def neuron_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Neuron settings that change behaviour, from the environment the run had."""
    flags = environ.get("NEURON_CC_FLAGS", "")
    try:
        words = shlex.split(flags)
    except ValueError:
        words = flags.split()
    found: dict[str, Any] = {}
    cache_dir = next((w.split("=", 1)[1] for w in words if w.startswith("--cache_dir=")), None)
    if cache_dir is None and "--cache_dir" in words and words.index("--cache_dir") + 1 < len(words):
        cache_dir = words[words.index("--cache_dir") + 1]
    found["compile_cache"] = cache_dir or environ.get("NEURON_COMPILE_CACHE_URL") or NEURON_DEFAULT_CACHE
    if "--retry_failed_compilation" in words:
        found["retry_failed_compilation"] = True
    if "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION" in environ:
        found["disable_fallback_execution"] = environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"]
    # neuron_parallel_compile runs the script with NEURON_PARALLEL_COMPILE=1 (as optimum-neuron reads it);
    # NEURON_EXTRACT_GRAPHS_ONLY is the same trial run's other switch.
    if environ.get("NEURON_PARALLEL_COMPILE") == "1" or environ.get("NEURON_EXTRACT_GRAPHS_ONLY", "0") not in ("", "0"):
        found["precompile_run"] = True
    return found


def folder_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Whether a cache folder exists and how full it is (files, bytes), read at the run's start."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        return {"path": str(folder), "state": "absent"}
    files = size = 0
    for root, _, names in os.walk(folder):
        for name in names:
            files += 1
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return {"path": str(folder), "state": "empty" if files == 0 else "populated", "files": files, "bytes": size}


def cache_states(environ: Mapping[str, str], backend: str | None) -> dict[str, Any]:
    """The compile and kernel caches of the run's backend, as they were when it began."""
    states: dict[str, Any] = {}
    root = environ.get("TORCH_TPU_TIER3_COMPILATION_CACHE_ROOT")
    if root:
        states["torch_tpu_compilation_cache"] = folder_state(root)
    # torch_xla's persistent compile cache: `torch_xla.runtime.initialize_cache(path)` sets these two variables.
    xla_cache = environ.get("XLA_PERSISTENT_CACHE_PATH")
    if xla_cache:
        read_only = environ.get("XLA_PERSISTENT_CACHE_READ_ONLY") == "1"
        states["xla_persistent_cache"] = {**folder_state(xla_cache), "read_only": read_only}
    if backend in ("rocm", "hip") or environ.get("MIOPEN_USER_DB_PATH") or environ.get("MIOPEN_CUSTOM_CACHE_DIR"):
        states["miopen_kernel_cache"] = folder_state(environ.get("MIOPEN_CUSTOM_CACHE_DIR", "~/.cache/miopen"))
        states["miopen_find_db"] = folder_state(environ.get("MIOPEN_USER_DB_PATH", "~/.config/miopen"))
    if backend == "neuron" or any(name.startswith("NEURON_") for name in environ):
        settings = neuron_settings(environ)
        states["neuron"] = settings
        cache = str(settings["compile_cache"])
        if "://" not in cache:  # an S3 cache (s3://...) cannot be looked at from here
            states["neuron_compile_cache"] = folder_state(cache)
    return states


def mfu(value: float, peak_flops: float, device: str | None) -> dict[str, Any]:
    """An MFU figure with the peak it assumed, and whether that peak is the device's own.

    torchtitan, for one, falls back to A100 figures on a device it does not know, so an MFU on Trainium or
    a TPU can be computed against a GPU's peak without a word.
    """
    known = KNOWN_PEAK_FLOPS.get(device or "")
    section: dict[str, Any] = {"value": value, "peak_flops_assumed": peak_flops, "device": device}
    if known is None:
        section["peak_known_for_device"] = False
        section["note"] = f"no known peak for {device or 'this device'}: the MFU rests on an assumed peak"
    else:
        section["peak_known_for_device"] = abs(known - peak_flops) <= 0.01 * known
        section["device_peak_flops"] = known
        if not section["peak_known_for_device"]:
            matches = [name for name, flops in KNOWN_PEAK_FLOPS.items() if abs(flops - peak_flops) <= 0.01 * flops]
            said = f" ({', '.join(matches)}'s)" if matches else ""
            section["note"] = f"assumed peak {peak_flops:.3g}{said} is not {device}'s {known:.3g}"
    return section
