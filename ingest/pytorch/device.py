"""What a run ran on, as torch sees it: the accelerator, its memory, versions, backend packages, precision.

Every reader is guarded: a backend that lacks a call (or raises) leaves that figure out, never the run.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import os
import re
import resource
import sys
import warnings
from typing import Any

import torch
from packaging.utils import canonicalize_name

GB = 1024**3
# Distributions that provide a PyTorch backend (or a torch.compile backend), by the name pip knows them under.
BACKEND_DISTRIBUTIONS = (
    "torch-neuronx",
    "torch-xla",
    "torch_tpu",
    "libtpu",
    "openvino",
    "intel-extension-for-pytorch",
)


def accelerator_type(device: str | torch.device | None = None) -> str:
    """The device type the run targets: the given one, else torch's current accelerator, else 'cpu'.

    A named device is parsed by hand: torch.device("tpu") raises where the TPU backend did not load (no TPU on
    this host), and that is the run's to find out, not a failure inside kb.
    """
    if device is not None:
        return str(device).partition(":")[0]
    current = _call(lambda: torch.accelerator.current_accelerator())
    return current.type if current is not None else "cpu"


NO_SYNC = "none: steps timed without device sync: launch times"
NO_WAY = "none: this backend offers kb no way to wait for the device: launch times"
SYNC_OFF = "none: synchronize=False: launch times"


def is_torch_tpu_module(module: Any) -> bool:
    """Whether `torch.<type>` is TorchTPU's: its device calls are internal to TorchTPU and refuse every other caller
    ("... is internal to TorchTPU and can only be called by the PyTorch framework"), so kb asks torch.accelerator."""
    return type(module).__module__.startswith("torch_tpu") or getattr(module, "__name__", "").startswith("torch_tpu")


def runtime_started(device_type: str) -> bool | None:
    """Whether the device's runtime is up, asked without starting it; None where the backend cannot say.

    Starting a runtime is not a question kb may ask: TorchTPU starts libtpu at the first
    `torch.accelerator.synchronize()` or memory reading, which waits minutes off Google Cloud and, where the
    runtime cannot start, aborts the process (SIGABRT) from the synchronize call. Until the run's own work has
    started the runtime, kb neither waits for the device (nothing can be queued on it) nor reads its memory.
    """
    if device_type == "cpu":
        return True
    if device_type == "xla":
        return "torch_xla" in sys.modules or None
    probe = backend_call(getattr(torch, device_type, None), "is_initialized")
    if probe is None:
        return None
    started = _call(probe)
    return None if started is None else bool(started)


def backend_call(module: Any, name: str) -> Any:
    """`module.<name>` as kb may call it, or None: TorchTPU's experimental calls warn once per process, so kb calls
    what the warning wraps, and the run's own first call still gets its warning."""
    function = getattr(module, name, None)
    if not callable(function):
        return None
    inner, owner = getattr(function, "__wrapped__", None), getattr(function, "__self__", None)
    if is_torch_tpu_module(module) and callable(inner) and owner is not None:
        return lambda *args: inner(owner, *args)
    return function


class Sync:
    """Waits for a device's queued work, so a measured window holds the work and not only its launch.

    Backends differ in what they support: torch_xla queues a lazy graph that only `torch_xla.sync()` cuts and
    `xm.wait_device_ops()` waits for; a PrivateUse1 backend (TorchNeuron, the kbdev test device) may refuse
    `torch.accelerator.synchronize()` ("Backend doesn't support synchronizing all streams on device"). The ways
    are tried in order, the first that works is kept, and one that raises later gives way to the next; when none
    works, or none exists, nothing waits and `method` says that the times are launch times. A refusal never
    reaches the run, and no way is tried before the device's runtime is up (see `runtime_started`).
    """

    __slots__ = ("_device_type", "_ready", "_ways", "method", "refused", "waited")

    def __init__(self, device_type: str, enabled: bool = True):
        self.refused: list[str] = []
        self._device_type = device_type
        self._ways = _sync_ways(device_type) if enabled and device_type != "cpu" else []
        self._ready = False
        self.waited = False
        self.method: str | None = None
        if device_type != "cpu":
            self.method = self._ways[0][0] if self._ways else NO_WAY if enabled else SYNC_OFF

    def __call__(self) -> None:
        if not self._ways:
            return
        if not self._ready:
            if runtime_started(self._device_type) is False:
                return  # nothing is queued on a device whose runtime has not started
            self._ready = True
        while self._ways:
            try:
                self._ways[0][1]()
                self.waited = True
                return
            except Exception as exc:  # refused or missing: the next way, never the run's failure
                name, _ = self._ways.pop(0)
                self.refused.append(f"{name}: {type(exc).__name__}: {str(exc).rstrip('.')}"[:300])
                self.method = self._ways[0][0] if self._ways else NO_SYNC

    def outcome(self) -> str | None:
        """What the entry's `timings.device_sync` says: the way that waited, or why nothing did."""
        if self._ways and not self.waited and runtime_started(self._device_type) is False:
            return f"none: the {self._device_type} runtime never started, so nothing waited: launch times"
        return self.method


def _sync_ways(device_type: str) -> list[tuple[str, Any]]:
    """The ways to wait for this device type, best first: torch_xla's own for XLA; else the accelerator API, the
    backend module's own `synchronize`, then the current stream's (TorchTPU's module only through the API)."""
    if device_type == "xla":
        return _xla_ways()
    ways: list[tuple[str, Any]] = []
    accelerator = getattr(torch, "accelerator", None)
    current = _call(lambda: accelerator.current_accelerator()) if accelerator else None
    if current is not None and current.type == device_type:
        ways.append(("torch.accelerator.synchronize", accelerator.synchronize))
    module = getattr(torch, device_type, None)  # e.g. torch.mps, torch.xpu, or a PrivateUse1 backend's module
    if is_torch_tpu_module(module):
        module = None
    if callable(getattr(module, "synchronize", None)):
        ways.append((f"torch.{device_type}.synchronize", module.synchronize))
    streams = module if callable(getattr(module, "current_stream", None)) else None
    if streams is None and current is not None and current.type == device_type:
        streams = accelerator
    if streams is not None:
        name = "torch.accelerator" if streams is accelerator else f"torch.{device_type}"
        ways.append((f"{name}.current_stream().synchronize", lambda: streams.current_stream().synchronize()))
    return ways


def _xla_ways() -> list[tuple[str, Any]]:
    """torch_xla's: cut the pending graph (it compiles and launches it), then wait for the device to finish it.
    Only when the run imported torch_xla: importing it here would start its runtime."""
    if "torch_xla" not in sys.modules:
        return []
    try:
        torch_xla = sys.modules["torch_xla"]
        xm = importlib.import_module("torch_xla.core.xla_model")
        cut = getattr(torch_xla, "sync", None) or xm.mark_step  # torch_xla.sync() from 2.6 on
        wait = xm.wait_device_ops
    except Exception:
        return []

    def sync_and_wait() -> None:
        cut()
        wait()

    name = "torch_xla.sync+xm.wait_device_ops" if hasattr(torch_xla, "sync") else "xm.mark_step+xm.wait_device_ops"
    return [(name, sync_and_wait)]


def compile_counter(device_type: str) -> Any:
    """A cheap reader of how many programs the backend itself has compiled so far, or None: torch_xla's
    `CompileTime` samples, TorchTPU's compilation-cache misses. A step during which it moved compiled (a new
    input shape recompiles on XLA without Dynamo knowing), so it is preparation, wherever it falls."""
    if device_type == "xla" and "torch_xla" in sys.modules:
        metrics = _call(lambda: importlib.import_module("torch_xla.debug.metrics"))
        if metrics is None:
            return None

        def xla_compiles() -> int | None:
            data = _call(lambda: metrics.metric_data("CompileTime"))
            return int(data[0]) if data else 0

        return xla_compiles
    module = getattr(torch, device_type, None)
    misses = backend_call(module, "_get_cache_misses") if is_torch_tpu_module(module) else None
    if misses is None:
        return None

    def tpu_misses() -> int | None:
        # Asked only once the runtime is up: the counter lives in it.
        return quiet(misses) if runtime_started(device_type) else None

    return tpu_misses


def compile_cache_counters(device_type: str) -> dict[str, int] | None:
    """TorchTPU's compilation-cache counters (requests, hits, misses) over the process, once its runtime is up
    (they live in it); None elsewhere."""
    module = getattr(torch, device_type, None)
    if not is_torch_tpu_module(module) or not runtime_started(device_type):
        return None
    found = {}
    for name in ("requests", "hits", "misses"):
        read = backend_call(module, f"_get_cache_{name}")
        value = quiet(read) if read is not None else None
        if isinstance(value, int):
            found[name] = value
    return found or None


def identity(device_type: str) -> dict[str, Any]:
    """Accelerator type, name, count, memory and capability for the entry's hardware.accelerators."""
    info: dict[str, Any] = {"type": device_type}
    if device_type == "cpu":
        return info
    if device_type == "xla":
        return {**info, **_xla_identity()}
    if device_type == torch._C._get_privateuse1_backend_name():
        info["privateuse1"] = True
    accelerator = getattr(torch, "accelerator", None)
    current = _call(lambda: accelerator.current_accelerator()) if accelerator else None
    serves = current is not None and current.type == device_type  # else its count is another device's, or 0
    info["count"] = _call(lambda: accelerator.device_count()) if serves else None
    module = getattr(torch, device_type, None)
    name = backend_call(module, "get_device_name")
    info["name"] = quiet(lambda: name(0)) if name is not None else None
    capability = quiet(lambda: accelerator.get_device_capability()) if serves else None
    if capability is None and module is not None and not is_torch_tpu_module(module):
        capability = quiet(lambda: module.get_device_capability(0))
    if isinstance(capability, tuple):
        info["capability"] = ".".join(map(str, capability))
    if serves and runtime_started(device_type) is not False:
        memory = quiet(lambda: accelerator.get_memory_info())
        # (0, 0) is a reading that failed (TorchTPU returns it with a warning when its runtime is down).
        if isinstance(memory, tuple) and len(memory) == 2 and memory[1]:
            info["memory_gb"] = round(memory[1] / GB, 2)
    return {key: value for key, value in info.items() if value is not None}


def _xla_identity() -> dict[str, Any]:
    """torch_xla's runtime says what it runs on; torch.accelerator knows nothing of XLA (its count is 0)."""
    if "torch_xla" not in sys.modules:
        return {}
    runtime = _call(lambda: importlib.import_module("torch_xla.runtime"))
    if runtime is None:
        return {}
    found = {
        "count": _call(runtime.global_runtime_device_count),
        "name": _call(runtime.device_type),  # "CPU", "TPU", "CUDA", "NEURON"
    }
    return {key: value for key, value in found.items() if value is not None}


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
    for name in dict.fromkeys(canonicalize_name(name) for name in BACKEND_DISTRIBUTIONS):
        try:
            found[name] = importlib.metadata.version(name)  # once, under its normalised name ("torch-tpu")
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
    # Quiet: torch 2.9 warns that the TF32 switches are deprecated whenever they are read.
    knobs: dict[str, Any] = {"float32_matmul_precision": quiet(torch.get_float32_matmul_precision)}
    knobs["cuda_matmul_allow_tf32"] = quiet(lambda: torch.backends.cuda.matmul.allow_tf32)
    knobs["cudnn_allow_tf32"] = quiet(lambda: torch.backends.cudnn.allow_tf32)
    for device_type in ("cuda", "cpu", "xla", "mps"):
        enabled = _call(lambda d=device_type: torch.is_autocast_enabled(d))
        if enabled:
            knobs[f"autocast_{device_type}"] = str(_call(lambda d=device_type: torch.get_autocast_dtype(d)))
    # torch_xla's C++ module is the top-level `_XLAC`, not torch_xla._XLAC.
    xla = sys.modules.get("_XLAC") or sys.modules.get("torch_xla._XLAC")
    if xla is not None:
        knobs["xla_mat_mul_precision"] = _call(lambda: xla._xla_get_mat_mul_precision())
    if "openvino" in sys.modules:
        knobs["openvino_inference_precision"] = _call(_openvino_precision)
    return {key: value for key, value in knobs.items() if value is not None}


def _openvino_precision() -> str:
    """The precision OpenVINO's CPU plugin computes in (bf16 on CPUs that have it, while torch says float32)."""
    import openvino

    hint = openvino.Core().get_property("CPU", "INFERENCE_PRECISION_HINT")  # an openvino.Type
    return hint.get_type_name() if hasattr(hint, "get_type_name") else str(hint)


def reset_peak_memory(device_type: str) -> None:
    if device_type != "cpu" and runtime_started(device_type) is not False:
        quiet(lambda: torch.accelerator.reset_peak_memory_stats())


def peak_memory_gb(device_type: str) -> float | None:
    """Peak device memory since the last reset; None where the backend does not tell (0 is read as unknown) and
    before the device's runtime started (reading it would start it)."""
    if device_type == "cpu" or runtime_started(device_type) is False:
        return None
    peak = quiet(lambda: torch.accelerator.max_memory_allocated())
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


def quiet(reader: Any) -> Any:
    """`_call`, with the Python warnings the reader gives kept from the run (TorchTPU warns on its experimental
    calls, once per process: the run's own first call would lose its warning to kb's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _call(reader)
