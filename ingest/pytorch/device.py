"""What a run ran on, as torch sees it: the accelerator, its memory, versions, backend packages, precision.

Every reader is guarded: a backend that lacks a call (or raises) leaves that figure out, never the run.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import re
import resource
import sys
from typing import Any

import torch

GB = 1024**3
# Distributions that provide a PyTorch backend, by the name pip knows them under.
BACKEND_DISTRIBUTIONS = (
    "torch-neuronx",
    "torch-xla",
    "torch_tpu",
    "torch-tpu",
    "libtpu",
    "intel-extension-for-pytorch",
)


def accelerator_type(device: str | torch.device | None = None) -> str:
    """The device type the run targets: the given one, else torch's current accelerator, else 'cpu'."""
    if device is not None:
        return torch.device(device).type
    current = _call(lambda: torch.accelerator.current_accelerator())
    return current.type if current is not None else "cpu"


NO_SYNC = "none: steps timed without device sync: launch times"


class Sync:
    """Waits for a device's queued work, so a measured window holds the work and not only its launch.

    Backends differ in what they support: a PrivateUse1 backend (TorchNeuron, the kbdev test device) may
    refuse `torch.accelerator.synchronize()` ("Backend doesn't support synchronizing all streams on
    device"). The ways are tried in order, the first that works is kept, and one that raises later gives
    way to the next; when none works, nothing waits and `method` says that the times are launch times.
    A refusal never reaches the run.
    """

    __slots__ = ("_ways", "method", "refused")

    def __init__(self, device_type: str, enabled: bool = True):
        self.refused: list[str] = []
        self._ways = _sync_ways(device_type) if enabled and device_type != "cpu" else []
        self.method: str | None = self._ways[0][0] if self._ways else None

    def __call__(self) -> None:
        while self._ways:
            try:
                self._ways[0][1]()
                return
            except Exception as exc:  # refused or missing: the next way, never the run's failure
                name, _ = self._ways.pop(0)
                self.refused.append(f"{name}: {type(exc).__name__}: {str(exc).rstrip('.')}"[:300])
                self.method = self._ways[0][0] if self._ways else NO_SYNC


def _sync_ways(device_type: str) -> list[tuple[str, Any]]:
    """The ways to wait for this device type, best first: the accelerator API, the backend module's own
    `synchronize`, then the current stream's."""
    ways: list[tuple[str, Any]] = []
    accelerator = getattr(torch, "accelerator", None)
    current = _call(lambda: accelerator.current_accelerator()) if accelerator else None
    if current is not None and current.type == device_type:
        ways.append(("torch.accelerator.synchronize", accelerator.synchronize))
    module = getattr(torch, device_type, None)  # e.g. torch.mps, torch.xpu, or a PrivateUse1 backend's module
    if callable(getattr(module, "synchronize", None)):
        ways.append((f"torch.{device_type}.synchronize", module.synchronize))
    streams = module if callable(getattr(module, "current_stream", None)) else None
    if streams is None and current is not None and current.type == device_type:
        streams = accelerator
    if streams is not None:
        name = "torch.accelerator" if streams is accelerator else f"torch.{device_type}"
        ways.append((f"{name}.current_stream().synchronize", lambda: streams.current_stream().synchronize()))
    return ways


def identity(device_type: str) -> dict[str, Any]:
    """Accelerator type, name, count, memory and capability for the entry's hardware.accelerators."""
    info: dict[str, Any] = {"type": device_type}
    if device_type == "cpu":
        return info
    if device_type == torch._C._get_privateuse1_backend_name():
        info["privateuse1"] = True
    accelerator = getattr(torch, "accelerator", None)
    info["count"] = _call(lambda: accelerator.device_count()) if accelerator else None
    module = getattr(torch, device_type, None)
    info["name"] = _call(lambda: module.get_device_name(0)) if module is not None else None
    capability = _call(lambda: accelerator.get_device_capability())
    if capability is None and module is not None:
        capability = _call(lambda: module.get_device_capability(0))
    if isinstance(capability, tuple):
        info["capability"] = ".".join(map(str, capability))
    memory = _call(lambda: accelerator.get_memory_info())
    if isinstance(memory, tuple) and len(memory) == 2:
        info["memory_gb"] = round(memory[1] / GB, 2)
    return {key: value for key, value in info.items() if value is not None}


def versions() -> dict[str, str]:
    """torch and the libraries it was built with or loaded: CUDA, HIP, cuDNN, NCCL, and backend packages."""
    found: dict[str, str] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    build = getattr(torch, "version", None)
    for name in ("cuda", "hip", "xpu"):
        value = getattr(build, name, None)
        if value:
            found[name] = str(value)
    cudnn = _call(lambda: torch.backends.cudnn.version()) if found.get("cuda") or found.get("hip") else None
    if cudnn:
        found["cudnn"] = str(cudnn)
    if torch.cuda.is_available():
        nccl = _call(lambda: torch.cuda.nccl.version())
        if nccl:
            found["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    for name in BACKEND_DISTRIBUTIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def neuron_flavour(version: str) -> str:
    """Which library a torch-neuronx version is: the same distribution name covers two different backends.

    From Neuron 2.33 on it is the native TorchNeuron backend, versioned by the PyTorch it serves
    (2.13.3.0, 2.14.3.0); before, it was the PyTorch/XLA-based library, versioned torch + SDK
    (2.9.0.2.15.x).
    """
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])]
    if len(parts) >= 5:
        return "xla-based (torch-neuronx before Neuron 2.33)"
    if len(parts) >= 2 and (parts[0], parts[1]) >= (2, 13):
        return "native TorchNeuron (Neuron 2.33 and later)"
    return "unknown"


def backend_notes() -> dict[str, str]:
    """Facts that a version string alone hides: which torch-neuronx, which of the packages named torch_tpu."""
    notes: dict[str, str] = {}
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        notes["torch-neuronx"] = neuron_flavour(importlib.metadata.version("torch-neuronx"))
    # Which distribution provides a module is only in every installed package's file list (slow to read):
    # looked up only when there is a torch_tpu to ask about.
    present = _call(lambda: importlib.util.find_spec("torch_tpu") is not None)
    providers = (_call(lambda: importlib.metadata.packages_distributions().get("torch_tpu")) or []) if present else []
    for name in providers:
        summary = _call(lambda name=name: importlib.metadata.metadata(name).get("Summary")) or ""
        notes["torch_tpu"] = f"import torch_tpu comes from the distribution {name}: {summary}".strip().rstrip(":")
    return notes


def threads() -> dict[str, Any]:
    """The thread settings that shape CPU speed: torch's own, and OMP/MKL's (torchrun sets 1 per rank)."""
    found: dict[str, Any] = {
        "torch_num_threads": _call(torch.get_num_threads),
        "torch_num_interop_threads": _call(torch.get_num_interop_threads),
    }
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(name):
            found[name] = os.environ[name]
    return {key: value for key, value in found.items() if value is not None}


def cpu_isa() -> str | None:
    """The instruction set torch's CPU kernels dispatch to here (e.g. AVX512, AVX2, DEFAULT)."""
    return _call(lambda: torch.backends.cpu.get_cpu_capability())


def package_list() -> str:
    """Every installed distribution as `name==version`, one a line, sorted: so any version can be checked later."""
    seen = {
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if dist.metadata and dist.metadata["Name"]
    }
    return "".join(f"{line}\n" for line in sorted(seen, key=str.lower))


def precision() -> dict[str, Any]:
    """The knobs that change numerics without changing code."""
    knobs: dict[str, Any] = {"float32_matmul_precision": _call(torch.get_float32_matmul_precision)}
    knobs["cuda_matmul_allow_tf32"] = _call(lambda: torch.backends.cuda.matmul.allow_tf32)
    knobs["cudnn_allow_tf32"] = _call(lambda: torch.backends.cudnn.allow_tf32)
    for device_type in ("cuda", "cpu", "xla", "mps"):
        enabled = _call(lambda d=device_type: torch.is_autocast_enabled(d))
        if enabled:
            knobs[f"autocast_{device_type}"] = str(_call(lambda d=device_type: torch.get_autocast_dtype(d)))
    xla = sys.modules.get("torch_xla._XLAC")
    if xla is not None:
        knobs["xla_mat_mul_precision"] = _call(lambda: xla._xla_get_mat_mul_precision())
    return {key: value for key, value in knobs.items() if value is not None}


def reset_peak_memory(device_type: str) -> None:
    if device_type != "cpu":
        _call(lambda: torch.accelerator.reset_peak_memory_stats())


def peak_memory_gb(device_type: str) -> float | None:
    """Peak device memory since the last reset; None where the backend does not tell (0 is read as unknown)."""
    if device_type == "cpu":
        return None
    peak = _call(lambda: torch.accelerator.max_memory_allocated())
    return round(peak / GB, 3) if peak else None


def host_peak_rss_gb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return round(peak * scale / GB, 3)


def _call(reader: Any) -> Any:
    try:
        return reader()
    except Exception:  # a backend without this call, or one that fails on it: the figure stays unknown
        return None
