"""Did the work stay on the accelerator? Completion is not acceleration: a run that finished may have run operators
on the CPU.

Backends report CPU fallback in different ways. MPS, and PrivateUse1 backends built on PyTorch's boxed
`at::native::cpu_fallback` (TorchNeuron, torch_npu...), warn in words like "The operator 'aten::nonzero' is not
currently supported on the MPS backend and will fall back to run on the CPU"; torch_xla counts every fallback in a
counter named after the operator (`aten::nonzero`); and a tensor left on the CPU by mistake says nothing at all.
The pieces here gather that evidence, each as plain JSON-able dicts, and `verdict` turns them into the entry's
`fallbacks` section.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import os
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.fallback_text import FALLBACK_TEXT, MESSAGE_CHARS, ONCE_TEXT, ops_named

if TYPE_CHECKING:
    import torch

EXAMPLES = 5
NOT_APPLICABLE = "not applicable: target is the CPU"

_MPS_SAMPLE = (
    "The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on the "
    "CPU. This may have performance implications."
)
# The root logger, plus backends' own loggers in case they do not propagate to it.
_LOGGERS = ("", "torch_xla", "torch_neuronx", "torch_npu")
# torch_xla's own "not lowered" analysis leaves this one out: it is .item() reading a value back, not an operator
# that XLA could not compile.
_XLA_NOT_A_FALLBACK = "aten::_local_scalar_dense"
# Backends that report a CPU fallback only on file descriptor 2, through C++ logging (absl LOG(WARNING)), never
# through Python's warnings or logging: TorchTPU logs "operator 'aten::<op>' is not implemented for TPU. Falling
# back to CPU" on every call.
FD2_BACKENDS = ("torch_tpu",)
FD2_DRAIN_S = 2.0  # how long the copy is given to pass on what was written before the watch ended
_TRANSFER_OPS = frozenset(
    {"aten::_local_scalar_dense", "aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize"}
)


class FallbackWatch:
    """Collects fallback warnings between start() and stop() without hiding them from the user.

    Sources: Python warnings (C++ TORCH_WARN reaches Python as a UserWarning) through `warnings.showwarning`, chained
    to the hook that was there before so the user still sees every warning; log records on the root logger and on
    backends' own loggers; and, when the run has already imported torch_xla, its `aten::` fallback counters,
    snapshotted at start() so only this run's fallbacks count.

    Each warning entry has a `count` of the times it was seen, except texts emitted once per process (MPS's
    TORCH_WARN_ONCE, and backends that copy its wording), which carry `at_least_once: True` instead: seeing one
    means the operator fell back at least once, not once. The same is why an empty result is weaker than it looks:
    a once-only warning already shown earlier in the process is not shown again, warning filters that ignore these
    texts drop them before any hook runs (then `hidden_by_filters` is True), and code that records warnings itself
    (`warnings.catch_warnings(record=True)` entered after start()) takes them before the hook.
    """

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self._seen: Counter[tuple[str | None, str, str]] = Counter()
        self._active = False
        self.hook: Callable[..., None] | None = None  # the warnings hook while start() has it in place
        self._previous_hook: Callable[..., None] | None = None
        self._handler = _LogHandler(self)
        self._xla_before: dict[str, int] | None = None
        self._hidden_by_filters = False
        self._earlier: list[dict[str, Any]] = []
        self._fd2: Fd2Copy | None = None
        self._fd2_missing: str | None = None
        self._openvino_before: set[int] = set()

    def __enter__(self) -> FallbackWatch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.result = self.stop()

    def start(self, fd2_log: Path | None = None, target: str | None = None) -> None:
        """Begin watching; with `fd2_log`, and a backend of FD2_BACKENDS loaded for a `target` that is not the CPU,
        file descriptor 2 is copied through to where it went and into that file, to be read at stop()."""
        self._seen.clear()
        self._fd2, self._fd2_missing = None, None
        loaded = [name for name in FD2_BACKENDS if name in sys.modules]
        if loaded and target is not None and _parse_device(target)[0] != "cpu":
            if fd2_log is None:
                self._fd2_missing = f"{loaded[0]} logs fallbacks on file descriptor 2, which was not read"
            else:
                try:
                    self._fd2 = Fd2Copy(fd2_log)
                except OSError as exc:
                    self._fd2_missing = (
                        f"{loaded[0]} logs fallbacks on file descriptor 2, which could not be read ({exc})"
                    )
        self._active = True
        self._hidden_by_filters = _filters_ignore(_MPS_SAMPLE)
        previous = warnings.showwarning

        def showwarning(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            if self._active:
                self.record(str(message), "warning")
            previous(message, category, filename, lineno, file, line)

        self._previous_hook, self.hook = previous, showwarning
        warnings.showwarning = showwarning
        for name in _LOGGERS:
            logging.getLogger(name).addHandler(self._handler)
        self._xla_before = _xla_counters()
        self._openvino_before = set(_openvino_partitioned())
        self._earlier = _earlier_warnings()

    def stop(self) -> dict[str, Any]:
        self._active = False
        if self._fd2 is not None:
            for line in self._fd2.close():
                self.record(line, "fd2")
        # Someone who replaced the hook after us chains to ours, which now only passes warnings on; restoring the old
        # hook under them would drop theirs.
        if warnings.showwarning is self.hook:
            warnings.showwarning = self._previous_hook
        for name in _LOGGERS:
            logging.getLogger(name).removeHandler(self._handler)
        entries = []
        for (op, message, source), count in self._seen.items():
            entry: dict[str, Any] = {"op": op, "message": message, "source": source}
            if ONCE_TEXT.search(message):
                entry["at_least_once"] = True
            else:
                entry["count"] = count
            entries.append(entry)
        ops = {op for op, _, _ in self._seen if op}
        result: dict[str, Any] = {"warnings": entries}
        if self._fd2 is not None:
            result["fd2_read"] = True
        if self._fd2_missing:
            result["unwatched"] = self._fd2_missing
        after = _xla_counters()
        if after is not None:
            before = self._xla_before or {}
            # A counter that went down was cleared during the run; what it holds now all happened since.
            deltas = {
                name: value - before.get(name, 0) if value >= before.get(name, 0) else value
                for name, value in after.items()
            }
            result["xla_fallback_ops"] = {name: delta for name, delta in sorted(deltas.items()) if delta > 0}
            ops.update(result["xla_fallback_ops"])
        result["ops"] = sorted(ops)
        openvino = openvino_partitions(self._openvino_before)
        if openvino is not None:
            result["openvino"] = openvino
        if self._earlier:
            result["before_start"] = self._earlier
        if self._hidden_by_filters or _filters_ignore(_MPS_SAMPLE):
            result["hidden_by_filters"] = True
        return result

    def record(self, text: str, source: str) -> None:
        """Count one message if it reports a CPU fallback (one entry per operator it names)."""
        if not FALLBACK_TEXT.search(text):
            return
        message = text[:MESSAGE_CHARS]
        for op in ops_named(text):
            self._seen[(op, message, source)] += 1


class Fd2Copy:
    """File descriptor 2, copied through `tee` to where it went and into a file, for as long as the run lasts.

    The copy is a process of its own so that nothing written is lost if this one dies (an abort from C++, a
    SIGKILL): `tee` passes on all it was given and ends when the last writer closes the pipe. It ignores SIGINT,
    as the run's own output after a Ctrl-C must still reach the terminal.
    """

    def __init__(self, log: Path):
        tee = shutil.which("tee")
        if tee is None:
            raise OSError("no tee on PATH")
        sys.stderr.flush()
        self._saved = os.dup(2)
        read, write = os.pipe()
        try:
            self._tee = subprocess.Popen([tee, "-i", "-a", str(log)], stdin=read, stdout=self._saved, close_fds=True)
        except OSError:
            os.close(read)
            os.close(write)
            os.close(self._saved)
            raise
        os.close(read)
        os.dup2(write, 2)
        os.close(write)
        self._log = log

    def close(self) -> list[str]:
        """Put file descriptor 2 back, and the lines written meanwhile (as far as the copy has passed them on)."""
        with contextlib.suppress(Exception):  # a closed or replaced sys.stderr has nothing of ours to flush
            sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        # A child the run started may still hold the pipe: then the file as far as the copy has come.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._tee.wait(FD2_DRAIN_S)
        try:
            with open(self._log, encoding="utf-8", errors="replace") as handle:
                return handle.read().splitlines()
        except OSError:
            return []


class _LogHandler(logging.Handler):
    def __init__(self, watch: FallbackWatch) -> None:
        super().__init__()
        self._watch = watch
        self._last: logging.LogRecord | None = None

    def emit(self, record: logging.LogRecord) -> None:
        # The handler sits on several loggers, so a propagating record arrives more than once; py.warnings records
        # (logging.captureWarnings) were already seen by the warnings hook, unless captureWarnings replaced it.
        if record is self._last or (record.name == "py.warnings" and warnings.showwarning is self._watch.hook):
            return
        self._last = record
        try:
            self._watch.record(record.getMessage(), "log")
        except Exception:
            self.handleError(record)


def _earlier_warnings() -> list[dict[str, Any]]:
    """CPU-fallback warnings this process gave before the watch began, from the warnings registries.

    A once-per-process warning (MPS's TORCH_WARN_ONCE and backends that copy it) given before the run started is
    never given again, so the watch alone would see a run whose every step falls back as clean. Python keeps each
    warning it showed in the `__warningregistry__` of the module it was attributed to: that is where they are.
    """
    found: dict[str, dict[str, Any]] = {}
    for module in list(sys.modules.values()):
        try:
            registry = vars(module).get("__warningregistry__")
            keys = [key for key in registry if isinstance(key, tuple)] if isinstance(registry, dict) else []
        except Exception:  # a module whose namespace cannot be read holds no registry worth reading
            continue
        for key in keys:
            text = str(key[0])
            if FALLBACK_TEXT.search(text):
                for op in ops_named(text):
                    found.setdefault(f"{op}|{text}", {"op": op, "message": text[:MESSAGE_CHARS]})
    return list(found.values())


def _filters_ignore(text: str) -> bool:
    """Whether the warning filters in force drop a UserWarning with this text before any hook sees it."""
    for action, message, category, module, lineno in warnings.filters:
        # Filters bound to a module or line cannot be judged without the warning's location: assume they miss.
        if module is not None or lineno or not issubclass(UserWarning, category):
            continue
        if message is None or message.match(text):
            return action == "ignore"
    return False


def _xla_counters() -> dict[str, int] | None:
    # Only when the run already loaded torch_xla: importing it here would start its runtime, or fail without it.
    if "torch_xla" not in sys.modules:
        return None
    try:
        metrics = importlib.import_module("torch_xla.debug.metrics")
        return {
            name: int(metrics.counter_value(name) or 0)
            for name in metrics.counter_names()
            if name.startswith("aten::") and name != _XLA_NOT_A_FALLBACK
        }
    except Exception:
        return None


def _openvino_partitioned() -> dict[int, Any]:
    """OpenVINO's partitioned graphs in this process, by id: one per graph Dynamo handed to backend="openvino"."""
    execute = sys.modules.get("openvino.frontend.pytorch.torchdynamo.execute")
    try:
        return {id(module): module for module in dict(getattr(execute, "partitioned_modules", None) or {}).values()}
    except Exception:  # another OpenVINO's layout: nothing read
        return {}


def openvino_partitions(before: set[int]) -> dict[str, Any] | None:
    """What OpenVINO did with the graphs it was given since `before`: partitions compiled by OpenVINO, those that
    fell back to PyTorch for good (OpenVINO logs that at DEBUG only: "OpenVINO execution failed with ... Falling back
    to native PyTorch execution"), and the operators outside every partition, which PyTorch runs between them.

    Read from OpenVINO's own state (each partition's `perm_fallback`, set when its compile or run failed), as its
    logs say nothing at the default level; None when OpenVINO partitioned nothing in the window.
    """
    graphs = [module for key, module in _openvino_partitioned().items() if key not in before]
    if not graphs:
        return None
    partitions = fell_back = 0
    between: Counter[str] = Counter()
    try:
        for graph in graphs:
            for _, module in graph.named_modules():
                if hasattr(module, "perm_fallback") and hasattr(module, "partition_id"):
                    partitions += 1
                    fell_back += bool(module.perm_fallback)
            for node in graph.graph.nodes:
                if node.op == "call_function" and "getitem" not in str(node.target):
                    between[str(node.target)] += 1
    except Exception:  # another OpenVINO's layout
        return None
    return {
        "backend": "openvino",
        "graphs": len(graphs),
        "partitions": partitions,
        "fell_back_to_pytorch": fell_back,
        "ran": partitions > fell_back,
        "ops_between_partitions": dict(sorted(between.items())),
    }


def _parse_device(device: str | torch.device) -> tuple[str, int | None]:
    # Parsed by hand: torch.device() rejects types whose backend is not loaded in this process.
    kind, _, index = str(device).partition(":")
    return kind, int(index) if index else None


def placement_audit(module: torch.nn.Module | None, outputs: Any, target: str | torch.device) -> dict[str, Any]:
    """Where tensors actually live, compared with the target device (any index when the target names none).

    Sections: parameters and buffers by name, plain tensor attributes of modules (not moved by `.to()`, a common way
    to leave a tensor on the CPU), and outputs, walked through nested tuples, lists, dicts and dataclasses.
    """
    want_type, want_index = _parse_device(target)

    def off_target(tensor: torch.Tensor) -> bool:
        return tensor.device.type != want_type or (want_index is not None and tensor.device.index != want_index)

    section: dict[str, Any] = {"target": str(target)}
    if module is not None:
        section["parameters"] = _tally(module.named_parameters(), off_target)
        section["buffers"] = _tally(module.named_buffers(), off_target)
        section["attributes"] = _tally(_tensor_attributes(module), off_target)
    section["outputs"] = _tally(_walk(outputs, "output", set()), off_target)
    return section


def _tally(named: Iterable[tuple[str, torch.Tensor]], off_target: Callable[[torch.Tensor], bool]) -> dict[str, Any]:
    total = 0
    examples = []
    off = 0
    for name, tensor in named:
        total += 1
        if off_target(tensor):
            off += 1
            if len(examples) < EXAMPLES:
                examples.append(f"{name}@{tensor.device}")
    return {"total": total, "off_target": off, "examples": examples}


def _tensor_attributes(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    import torch

    for prefix, sub in module.named_modules():
        # Parameters and buffers live in their own dicts, so vars() holds only plain attributes.
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor):
                yield (f"{prefix}.{attr}" if prefix else attr), value


def _walk(value: Any, path: str, seen: set[int]) -> Iterator[tuple[str, torch.Tensor]]:
    import torch

    if isinstance(value, torch.Tensor):
        yield path, value
        return
    if id(value) in seen:
        return
    if isinstance(value, Mapping):
        seen.add(id(value))
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}", seen)
    elif isinstance(value, (list, tuple)):
        seen.add(id(value))
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        seen.add(id(value))
        for field in dataclasses.fields(value):
            yield from _walk(getattr(value, field.name), f"{path}.{field.name}", seen)


def count_cpu_round_trips(fn: Callable[[], Any], *, steps: int = 3, device: str | torch.device) -> dict[str, Any]:
    """Run fn `steps` times under torch.profiler and count host<->device transfers and host synchronisation.

    Counted, by operator: `aten::_local_scalar_dense` on a device tensor (`.item()` and friends), and copies whose
    tensors sit on both the CPU and another device (outermost copy only, so one `.to()` counts once; when the profiler
    records no tensor metadata, every copy counts). `fallback_ops` names the operators whose kernel called
    `aten::_to_cpu`, the first step of PyTorch's boxed CPU fallback: unlike once-only warnings, it sees every step.
    Device-side `Memcpy DtoH/HtoD` events, where the device's profiler records them, are listed as `device_memcpy`
    (they are the same transfers seen from the device, so they are not added again). Never raises.
    """
    if _parse_device(device)[0] == "cpu":
        return {"window_steps": 0, "round_trips": 0, "per_step": 0.0, "by_op": {}, "note": NOT_APPLICABLE}
    try:
        from torch.profiler import ProfilerActivity, profile, supported_activities

        activities = [ProfilerActivity.CPU]
        # rename_privateuse1_backend adds an alias (ProfilerActivity.NEURON...), so PrivateUse1 devices match too.
        device_activity = getattr(ProfilerActivity, _parse_device(device)[0].upper(), None)
        if device_activity is not None and device_activity in supported_activities():
            activities.append(device_activity)
        with profile(activities=activities, record_shapes=True) as prof:
            for _ in range(steps):
                fn()
        by_op: Counter[str] = Counter()
        fallback_ops: Counter[str] = Counter()
        stack = list(prof.profiler.kineto_results.experimental_event_tree())
        while stack:
            event = stack.pop()
            if any(child.name == "aten::_to_cpu" for child in event.children):
                fallback_ops[event.name] += 1
            if _crosses_devices(event):
                by_op[event.name] += 1
                continue  # its children are the same transfer
            stack.extend(event.children)
        memcpy = Counter(
            " ".join(event.name.split()[:2])
            for event in prof.events()
            if event.name.startswith(("Memcpy DtoH", "Memcpy HtoD"))
        )
    except Exception as error:
        return {"window_steps": steps, "error": f"{type(error).__name__}: {error}"[:MESSAGE_CHARS]}
    round_trips = sum(by_op.values())
    section = {
        "window_steps": steps,
        "round_trips": round_trips,
        "per_step": round(round_trips / steps, 3) if steps else 0.0,
        "by_op": dict(sorted(by_op.items())),
        "fallback_ops": dict(sorted(fallback_ops.items())),
    }
    if memcpy:
        section["device_memcpy"] = dict(sorted(memcpy.items()))
    return section


def _crosses_devices(event: Any) -> bool:
    if event.name not in _TRANSFER_OPS:
        return False
    kinds = set()
    stack = list(getattr(event.extra_fields, "inputs", None) or [])
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif hasattr(value, "device"):
            kinds.add(value.device.type)
    if not kinds:
        return True
    if event.name == "aten::_local_scalar_dense":
        return kinds != {"cpu"}
    return "cpu" in kinds and len(kinds) > 1


def verdict(
    target: str | torch.device,
    watch: dict[str, Any] | None,
    placement: dict[str, Any] | None,
    round_trips: dict[str, Any] | None,
) -> dict[str, Any]:
    """The entry's `fallbacks` section: did all work stay on the accelerator, and what says so.

    `stayed_on_device` is True only when the warnings watch, the one check that covers the whole run (with the
    warnings the process gave before the run began), found nothing and no other check found anything: a placement
    audit is a snapshot of tensors and a profiler window a few steps, so either can find fallbacks but not vouch
    alone. False with the reasons when any check found fallbacks or off-target tensors, and None when no check
    could give an answer or the target is the CPU itself.
    """
    kind = _parse_device(target)[0]
    backend = _compile_backend(watch)
    if watch is not None and "openvino" in watch:  # told once, as the section's compile_backend
        watch = {key: value for key, value in watch.items() if key != "openvino"}
    pieces = {
        key: value
        for key, value in (("warnings", watch), ("placement", placement), ("profiler", round_trips))
        if value is not None
    }
    if kind == "cpu":
        section = {
            "target": str(target),
            "stayed_on_device": None,
            "summary": "The target is the CPU, so CPU fallback does not apply.",
            "evidence": ["target is the CPU: nothing can fall back to it"],
            **pieces,
        }
        return _with_compile_backend(section, backend)
    findings: list[str] = []
    evidence: list[str] = []
    vouched: list[str] = []
    if watch is not None:
        _judge_watch(watch, findings, evidence, vouched)
    if placement is not None:
        _judge_placement(placement, kind, findings, evidence, vouched)
    if round_trips is not None:
        _judge_profiler(round_trips, findings, evidence)
    if not evidence:
        evidence.append("no check ran")
    if findings:
        stayed, summary = False, f"Not all work stayed on {kind}: {'; '.join(findings)}."
    elif vouched:
        stayed, summary = True, f"All work stayed on {kind}: {' and '.join(vouched)}."
    else:
        stayed, summary = None, f"Whether all work stayed on {kind} is not known: no check could give an answer."
    section = {"target": str(target), "stayed_on_device": stayed, "summary": summary, "evidence": evidence, **pieces}
    return _with_compile_backend(section, backend)


def _compile_backend(watch: dict[str, Any] | None) -> dict[str, Any] | None:
    """Whether the compile backend ran the graphs it was given, with its summary line; None where kb cannot tell."""
    found = (watch or {}).get("openvino")
    if not found:
        return None
    name, parts, fell = found["backend"], found["partitions"], found["fell_back_to_pytorch"]
    between = sorted(found.get("ops_between_partitions") or {})
    if not found["ran"]:
        said = (
            f"The compile backend {name} never ran: all {parts} of its partitions fell back to plain PyTorch, so the "
            "figures are PyTorch's."
        )
    else:
        said = f"The compile backend {name} ran {parts - fell} of {parts} partitions"
        said += f"; {fell} fell back to plain PyTorch" if fell else ""
        said += f"; PyTorch ran {_names(between)} between them" if between else ""
        said += "."
    return {**found, "summary": said}


def _with_compile_backend(section: dict[str, Any], backend: dict[str, Any] | None) -> dict[str, Any]:
    if backend is not None:
        section["compile_backend"] = backend
        section["evidence"] = [*section["evidence"], backend["summary"]]
        if not backend["ran"]:
            section["summary"] = f"{backend['summary']} {section['summary']}"
    return section


def _names(ops: list[str]) -> str:
    return ", ".join(ops[:EXAMPLES]) + (", ..." if len(ops) > EXAMPLES else "")


def _judge_watch(watch: dict[str, Any], findings: list[str], evidence: list[str], vouched: list[str]) -> None:
    ops = watch.get("ops", [])
    seen = watch.get("warnings", [])
    if ops:
        finding = f"{len(ops)} operator{'s' if len(ops) > 1 else ''} fell back to the CPU ({_names(ops)})"
        findings.append(finding)
        evidence.append(f"fallback watch: {finding}")
    elif seen:
        finding = f"{len(seen)} CPU-fallback message{'s' if len(seen) > 1 else ''} naming no operator"
        findings.append(finding)
        evidence.append(f"fallback watch: {finding}")
    xla = watch.get("xla_fallback_ops")
    if xla is not None:
        evidence.append(
            f"torch_xla counters: {sum(xla.values())} CPU fallback calls of {len(xla)} operators"
            if xla
            else "torch_xla counters: no aten:: fallbacks"
        )
    earlier = watch.get("before_start") or []
    if earlier:
        named = sorted({item["op"] for item in earlier if item.get("op")})
        finding = (
            f"{_names(named) or 'an operator'} fell back to the CPU before the run started, and its warning is given"
            " once per process, so any call of it in the run fell back unseen"
        )
        findings.append(finding)
        evidence.append(f"warnings registry: {finding}")
    if ops or seen or earlier:
        return
    if watch.get("unwatched"):
        evidence.append(f"fallback watch: {watch['unwatched']}, so the watch cannot vouch for the run")
    elif watch.get("hidden_by_filters"):
        evidence.append("fallback watch: warning filters ignore fallback warnings, so none could be seen")
    else:
        read = " or line on file descriptor 2" if watch.get("fd2_read") else ""
        evidence.append(f"fallback watch: no CPU-fallback warning or log message{read}")
        vouched.append("no CPU-fallback warnings")


def _judge_placement(
    placement: dict[str, Any], kind: str, findings: list[str], evidence: list[str], vouched: list[str]
) -> None:
    sections = {
        name: placement[name] for name in ("parameters", "buffers", "attributes", "outputs") if name in placement
    }
    total = sum(part["total"] for part in sections.values())
    off = sum(part["off_target"] for part in sections.values())
    for name, part in sections.items():
        if part["off_target"]:
            evidence.append(
                f"placement: {part['off_target']} of {part['total']} {name} not on {placement['target']}"
                f" ({', '.join(part['examples'])})"
            )
    if off:
        findings.append(f"{off} of {total} tensors were not on {placement['target']}")
    elif total:
        evidence.append(f"placement: all {total} tensors ({', '.join(sections)}) on {placement['target']}")
        if vouched:  # tensors where they belong say nothing of where the operators ran: only beside the watch
            vouched.append(f"every checked tensor ({total}) on {kind}")
    else:
        evidence.append("placement: no tensors to check")


def _judge_profiler(round_trips: dict[str, Any], findings: list[str], evidence: list[str]) -> None:
    if "error" in round_trips:
        evidence.append(f"profiler: failed ({round_trips['error']})")
        return
    if "note" in round_trips:
        evidence.append(f"profiler: {round_trips['note']}")
        return
    fell_back = round_trips.get("fallback_ops", {})
    if fell_back:
        finding = (
            f"the profiler saw {sum(fell_back.values())} calls go through the CPU fallback "
            f"({_names(sorted(fell_back))})"
        )
        findings.append(finding)
        evidence.append(f"profiler: {finding}")
    evidence.append(
        f"profiler: {round_trips['round_trips']} host<->device transfers or syncs in "
        f"{round_trips['window_steps']} steps ({round_trips['per_step']} per step)"
    )
