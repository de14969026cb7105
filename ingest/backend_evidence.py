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
