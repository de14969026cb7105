"""What did torch.compile do in this run? Frames compiled, time per stage, graph breaks, recompiles, cache state.

The result is the entry's `compile` section. Everything here reads PyTorch's private compile bookkeeping
(`torch._dynamo.utils`, `torch._logging`), which moves between releases, so every read is guarded: what
could not be read is named in `unreadable` and the run goes on. Where each figure lives in PyTorch 2.13:

- one `CompilationMetrics` record per frame compile in `torch._dynamo.utils.get_compilation_metrics()`
  (a bounded deque), with the per-stage times, the recompile reason and per-frame cache hit/miss counts;
- `torch._dynamo.utils.counters`: `stats.unique_graphs`, graph breaks keyed by their message in
  `unimplemented` (and `graph_break`), resume functions in `resumes`, FX-graph cache counts in `inductor`
  and AOTAutograd cache counts in `aot_autograd` (`counters["recompiles"]` is never incremented: unused);
- `calculate_time_spent()`: process-wide seconds per compile phase, cleared by `torch._dynamo.reset()`;
- the log records of the `graph_breaks` and `recompiles` artifact loggers, captured without printing them.

The section: `frames` (one per frame compile, at most 200: id, function, compile_s, dynamo_s,
aot_autograd_s, backend_s (None when inductor did not run, as on a cache hit), recompile_reason, fx_cache
and aot_cache ("hit"/"miss"/None), backward_s when its backward graph compiled during the watch),
`frame_count`, `compile_s`, `stages_s`, `stages_nested`, `graphs`, `graph_breaks`, `recompiles`, `cache`,
`cache_counters`, `time_spent_s`, `torch` and, when something failed, `unreadable`. A top-level figure
that could not be read is left out, not guessed.

Stage times are NESTED, not additive: dynamo's time includes AOTAutograd's, which includes the backend's
(inductor's). The section says so with `stages_nested: True`. `stages_s.backward` is outside that nest:
AOTAutograd compiles the backward graph lazily, at the first backward() call.

OpenVINO's backend (`backend="openvino"`) only partitions the graph during Dynamo's compile (its part of
`backend_compile_time_s`, inside the frame's time); it converts and compiles each partition at that partition's
first execution, in `openvino_compile` of its execute module, which no torch metric times. The watch times
those calls (`backend_compile`: seconds and compiles) and adds them to `compile_s`, naming the sum's sources in
`compile_source`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from ingest.compile_format import (
    CACHE_COUNTERS,
    MAX_REASON_CHARS,
    break_reason,
    classify,
    compile_split,
    counter_delta,
)

SIGNIFICANT = 6
MAX_FRAMES = 200
MAX_REASONS = 50
MAX_LOG_RECORDS = 2000
# The metrics deque holds 64 records by default; a run that compiles more would lose its first frames.
METRICS_LIMIT = 256

# counters sub-dicts this module reads; copied at start() so only this run's increments count.
COUNTER_GROUPS = ("stats", "unimplemented", "graph_break", "resumes", "inductor", "aot_autograd")
# (module holding the artifact logger, its attribute there, artifact); the logger is named "<module>.__<artifact>".
LOGGERS = (
    ("torch._dynamo.symbolic_convert", "graph_break_log", "graph_breaks"),
    ("torch._dynamo.convert_frame", "graph_break_log", "graph_breaks"),
    ("torch._dynamo.guards", "recompiles_log", "recompiles"),
    ("torch._dynamo.guards", "recompiles_verbose_log", "recompiles_verbose"),
)
CACHE_ENV = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")

_RECOMPILING = re.compile(r"Recompiling function (\S+) in ")
_ENTRY_ID = re.compile(r"\A\[?\d+/\d+\]?:\s*")  # which cached entry's guard failed: "0/1: "
# Where Dynamo says a break is: "Graph break in user code at FILE:LINE" in a log record, and the traced line in a
# counter's message ('# File "FILE", line N, in fn, code: ...').
_USER_CODE_AT = re.compile(r"in user code at (.+?):(\d+)")
_TRACED_AT = re.compile(r'# File "([^"]+)", line (\d+)')
# A break Dynamo could not resume from (one in a loop, above all) makes it run the whole frame eagerly.
_EAGER_FRAME = "falling back to eager"
_ENCOUNTERED = "Graph break encountered:"
_CHAINED = "*** While handling this graph break, another graph break occurred: ***"
_SKIPPED_FRAME = re.compile(r"frame skipped: (\S+) \((.+) line (\d+)\)")


def _recompile_reason(function: str, failed: str) -> str:
    """The function and its failed guard, without the failed entry's id ("0/0: "): "fn: tensor 'x' size mismatch..."."""
    return f"{function}: {_ENTRY_ID.sub('', failed, count=1)}"[:MAX_REASON_CHARS]


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}")


def _failed(what: str, exc: BaseException) -> str:
    return f"{what}: {type(exc).__name__}"


def _text(value: Any) -> str | None:
    return None if value is None else str(value)[:MAX_REASON_CHARS]


class _Capture(logging.Handler):
    """Keeps the graph-break and recompile log records as short reasons, parsed as they arrive."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.graph_breaks: list[tuple[str, str | None, bool]] = []  # (reason, "file:line", frame ran eagerly)
        self.recompiles: list[str] = []  # one "function: guard failure" string per failed guard
        self.recompile_events = 0
        self.failures = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if len(self.graph_breaks) + self.recompile_events >= MAX_LOG_RECORDS:
                return
            message = record.getMessage()
            if record.name.endswith("__graph_breaks"):
                self.graph_breaks.append(self._graph_break_reason(message, record))
            else:
                self._add_recompile(message)
        except Exception:  # never into the compile that logged, nor onto stderr (as handleError would)
            self.failures += 1

    @staticmethod
    def _graph_break_reason(message: str, record: logging.LogRecord) -> tuple[str, str | None, bool]:
        at = _USER_CODE_AT.search(message)
        where = f"{at.group(1)}:{at.group(2)}" if at else None
        marker = "Graph Break Reason:"
        if marker in message:
            text = message.split(marker, 1)[1].split("User code traceback:", 1)[0]
            eager = _EAGER_FRAME in text
            if eager:  # "Failed to handle graph break gracefully. Skipping ... eager. Graph break encountered:"
                text = text.split(_ENCOUNTERED, 1)[-1]
            return break_reason(text), where, eager
        # The "skip frame" record carries the reason only in its exception.
        if record.exc_info and record.exc_info[1] is not None:
            return break_reason(str(record.exc_info[1])), where, True
        return break_reason(message), where, False

    def _add_recompile(self, message: str) -> None:
        match = _RECOMPILING.search(message)
        if not match:
            return
        self.recompile_events += 1
        # One failed guard per cached entry, the newest first: the first is what made this recompile, the rest
        # are older entries' failures, said again at every recompile.
        failed = next((line.strip()[2:] for line in message.splitlines() if line.strip().startswith("- ")), None)
        if failed is not None:
            self.recompiles.append(_recompile_reason(match.group(1), failed))


OPENVINO_EXECUTE = "openvino.frontend.pytorch.torchdynamo.execute"  # holds `openvino_compile`, called lazily
OPENVINO_SOURCE = "Dynamo's compilation metrics + OpenVINO's compile at first execution"


class _OpenVinoCompiles:
    """Times OpenVINO's compile of each partition (its execute module's `openvino_compile`, called when the
    partition first runs) while attached: the call goes through unchanged, its result or error included."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.compiles = 0
        self._attached: tuple[Any, Any, Any] | None = None  # (module, original, wrapper)

    def attach(self, module: Any) -> None:
        original = getattr(module, "openvino_compile", None)
        if self._attached is not None or not callable(original):
            return

        def openvino_compile(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - began
                self.compiles += 1

        module.openvino_compile = openvino_compile
        self._attached = (module, original, openvino_compile)

    def detach(self) -> None:
        if self._attached is None:
            return
        module, original, wrapper = self._attached
        self._attached = None
        if getattr(module, "openvino_compile", None) is wrapper:  # else another wrapper went on top: left alone
            module.openvino_compile = original

    def section(self) -> dict[str, Any] | None:
        if not self.compiles:
            return None
        return {"backend": "openvino", "seconds": _round(self.seconds), "compiles": self.compiles,
                "when": "at each partition's first execution"}  # fmt: skip


class CompileWatch:
    """Collects compile evidence between start() and stop(); one per run.

    start() notes baselines (the compile records and counters already there) so only this run's compiles
    count, and captures the graph-break and recompile log records. In a process that has not imported
    torch._dynamo yet, the baselines are empty and the capture begins when the script imports it (a wrapt
    post-import hook), so an eager run never pays for the import. Nothing new reaches the user's stderr:
    when the user has not enabled those logs, their loggers are raised to DEBUG with propagation off (and
    any handler of their own set aside), so the records reach only this module's handler; when the user
    has, the handler is only added. Dynamo formats the recompile message only while "recompiles" is on in
    torch's log state, so that is switched on for the watch. stop() restores all of it and returns the
    section. Neither ever raises; a figure whose baseline or value could not be read is left out and named
    in `unreadable`.
    """

    def __init__(self) -> None:
        self._started = False
        self._reset()

    def _reset(self) -> None:
        self._unreadable: list[str] = []
        # None: not read (a failed baseline must not turn everything before the run into this run's figures).
        self._metrics_before: list[Any] | None = None
        self._counters_before: dict[str, dict[str, int]] | None = None
        self._time_before: dict[str, float] | None = None
        self._metrics_limit: int | None = None
        self._capture = _Capture()
        self._loggers: list[tuple[logging.Logger, int, bool, list[logging.Handler]]] = []
        self._enabled_recompiles = False
        self._token = object()  # a hook left by an earlier start() sees another token and does nothing
        # Dynamo's compile callbacks: every frame compile and lazily compiled backward graph, as it happens, so a
        # step can tell that it compiled (compiles changed while it ran).
        self.compiles = 0
        self._compile_began = 0.0
        self._compile_wall_s = 0.0
        self._callbacks: tuple[Any, Any, Any] | None = None
        self._openvino = _OpenVinoCompiles()

    def start(self) -> None:
        if self._started:  # a second start() begins again rather than stacking a second set of changes
            self._detach_loggers([])
            self._restore_metrics_limit([])
            self._openvino.detach()
        self._reset()
        self._started = True
        try:
            self._watch_openvino()
        except Exception as exc:
            self._unreadable.append(_failed("time OpenVINO's compile", exc))
        if "torch._dynamo" not in sys.modules:
            # Nothing has compiled in this process yet, so every baseline is empty. Importing Dynamo takes
            # seconds that an eager script should not pay: the watch begins when the script imports it
            # (torch.compile does, at its first call), before anything compiles.
            from wrapt import register_post_import_hook

            self._metrics_before, self._counters_before, self._time_before = [], {}, {}
            token = self._token
            register_post_import_hook(lambda module: self._begin_on_import(token), "torch._dynamo")
            return
        try:
            from torch._dynamo import utils
        except Exception as exc:
            self._unreadable.append(_failed("import torch._dynamo.utils", exc))
            return
        try:
            # Held by reference: the deque drops its oldest records when full, so a length would mislead.
            self._metrics_before = list(utils.get_compilation_metrics())
        except Exception as exc:
            self._unreadable.append(_failed("get_compilation_metrics", exc))
        self._raise_metrics_limit(utils)
        try:
            self._counters_before = _snapshot(utils.counters)
        except Exception as exc:
            self._unreadable.append(_failed("counters", exc))
        try:
            self._time_before = dict(utils.calculate_time_spent())
        except Exception as exc:
            self._unreadable.append(_failed("calculate_time_spent", exc))
        self._attach_loggers()
        self._attach_callbacks()

    def _watch_openvino(self) -> None:
        module = sys.modules.get(OPENVINO_EXECUTE)
        if module is not None:
            self._openvino.attach(module)
            return
        from wrapt import register_post_import_hook

        token = self._token

        def attach(module: Any) -> None:
            if token is self._token and self._started:
                try:  # inside the script's import of OpenVINO: that import must go on whatever happens here
                    self._openvino.attach(module)
                except Exception as exc:
                    self._unreadable.append(_failed("time OpenVINO's compile", exc))

        register_post_import_hook(attach, OPENVINO_EXECUTE)

    def _begin_on_import(self, token: object) -> None:
        if token is not self._token or not self._started:
            return
        try:  # runs inside the script's import of Dynamo: whatever happens, that import must go on
            self._raise_metrics_limit(sys.modules["torch._dynamo.utils"])
            self._attach_loggers()
            self._attach_callbacks()
        except Exception as exc:
            self._unreadable.append(_failed("watch Dynamo once imported", exc))

    def stop(self) -> dict[str, Any]:
        """The `compile` section; see the module docstring for where each figure comes from."""
        if not self._started:
            return {"unreadable": ["start() was not called"]}
        self._started = False
        unreadable = list(self._unreadable)
        section: dict[str, Any] = {}
        try:
            section = self._collect(unreadable)
        except Exception as exc:  # a bug here must not cost the user's run
            unreadable.append(_failed("compile section", exc))
        finally:
            self._openvino.detach()
            self._detach_loggers(unreadable)
            self._detach_callbacks()
            self._restore_metrics_limit(unreadable)
        if self._capture.failures:
            unreadable.append(f"log records: {self._capture.failures} not parsed")
        if unreadable:
            section["unreadable"] = unreadable
        return section

    def _raise_metrics_limit(self, utils: Any) -> None:
        try:
            current = utils._compilation_metrics.maxlen
            if current is not None and current < METRICS_LIMIT:
                utils.set_compilation_metrics_limit(METRICS_LIMIT)
                self._metrics_limit = current
        except Exception as exc:
            self._unreadable.append(_failed("compilation metrics limit", exc))

    def _restore_metrics_limit(self, unreadable: list[str]) -> None:
        if self._metrics_limit is None:
            return
        try:
            # Keeps the newest records, as the smaller deque would have.
            sys.modules["torch._dynamo.utils"].set_compilation_metrics_limit(self._metrics_limit)
        except Exception as exc:
            unreadable.append(_failed("restore compilation metrics limit", exc))
        self._metrics_limit = None

    def _attach_callbacks(self) -> None:
        def began(args: Any) -> None:
            self.compiles += 1
            self._compile_began = time.perf_counter()

        def ended(args: Any) -> None:
            self._compile_wall_s += time.perf_counter() - self._compile_began

        try:
            handler = sys.modules["torch._dynamo.callback"].callback_handler
            handler.register_start_callback(began)
            handler.register_end_callback(ended)
            self._callbacks = (handler, began, ended)
        except Exception as exc:
            self._unreadable.append(_failed("compile callbacks", exc))

    def _detach_callbacks(self) -> None:
        if self._callbacks is None:
            return
        handler, began, ended = self._callbacks
        self._callbacks = None
        # torch._dynamo.reset() clears every callback: then there is nothing left to remove.
        with contextlib.suppress(ValueError):
            handler.remove_start_callback(began)
        with contextlib.suppress(ValueError):
            handler.remove_end_callback(ended)

    def _attach_loggers(self) -> None:
        try:
            log_state = sys.modules["torch._logging._internal"].log_state
            if not (log_state.is_artifact_enabled("recompiles") or log_state.is_artifact_enabled("recompiles_verbose")):
                log_state.enable_artifact("recompiles")
                self._enabled_recompiles = True
        except Exception as exc:
            self._unreadable.append(_failed("recompiles log state", exc))
        for module_name, attribute, artifact in LOGGERS:
            try:
                logger = getattr(sys.modules.get(module_name), attribute, None) or logging.getLogger(
                    f"{module_name}.__{artifact}"
                )
                if logger.isEnabledFor(logging.DEBUG):
                    # The user already sees these records; only listen in.
                    self._loggers.append((logger, logger.level, logger.propagate, []))
                else:
                    # Nobody sees them now: route them to this handler alone, so stderr stays as it was.
                    detached = list(logger.handlers)
                    for handler in detached:
                        logger.removeHandler(handler)
                    self._loggers.append((logger, logger.level, logger.propagate, detached))
                    logger.setLevel(logging.DEBUG)
                    logger.propagate = False
                logger.addHandler(self._capture)
            except Exception as exc:
                self._unreadable.append(_failed(f"{artifact} log", exc))

    def _detach_loggers(self, unreadable: list[str]) -> None:
        for logger, level, propagate, detached in self._loggers:
            try:
                logger.removeHandler(self._capture)
                logger.setLevel(level)
                logger.propagate = propagate
                for handler in detached:
                    logger.addHandler(handler)
            except Exception as exc:
                unreadable.append(_failed(f"restore logger {logger.name}", exc))
        self._loggers = []
        if self._enabled_recompiles:
            try:
                sys.modules["torch._logging._internal"].log_state.artifact_names.discard("recompiles")
            except Exception as exc:
                unreadable.append(_failed("restore recompiles log state", exc))
            self._enabled_recompiles = False

    def _collect(self, unreadable: list[str]) -> dict[str, Any]:
        import torch

        utils = sys.modules.get("torch._dynamo.utils") or _NeverImported
        section: dict[str, Any] = {}
        records = self._new_records(utils, unreadable)
        if records is not None:
            section.update(_frames_section(records, unreadable))
        backend = self._openvino.section()
        if backend is not None:
            section["backend_compile"] = backend
            section["compile_s"] = _round((section.get("compile_s") or 0.0) + backend["seconds"])
            section["compile_source"] = OPENVINO_SOURCE
        delta = self._counters_delta(utils, unreadable)
        if delta is not None:
            section["graphs"] = delta.get("stats", {}).get("unique_graphs", 0)
            state = classify(delta)
            if state is None and section["graphs"] > 0:
                state = "bypass"  # graphs compiled without a single cache lookup: the caches are off
            section["cache"] = state
            section["cache_counters"] = {
                name: delta.get(group, {}).get(key, 0) for name, (group, key) in CACHE_COUNTERS.items()
            }
        section["graph_breaks"] = self._graph_breaks(delta)
        section["recompiles"] = self._recompiles(records)
        spent = self._time_spent(utils, unreadable)
        if spent is not None:
            section["time_spent_s"] = spent
        if self._callbacks is not None and self.compiles:
            section["compile_wall_s"] = _round(self._compile_wall_s)  # as Dynamo's compile callbacks timed it
        section["torch"] = str(getattr(torch, "__version__", "unknown"))
        return section

    def _new_records(self, utils: Any, unreadable: list[str]) -> list[Any] | None:
        if self._metrics_before is None:
            return None
        try:
            current = list(utils.get_compilation_metrics())
        except Exception as exc:
            unreadable.append(_failed("get_compilation_metrics", exc))
            return None
        seen = {id(record) for record in self._metrics_before}
        return [record for record in current if id(record) not in seen]

    def _counters_delta(self, utils: Any, unreadable: list[str]) -> dict[str, dict[str, int]] | None:
        if self._counters_before is None:
            return None
        try:
            return counter_delta(self._counters_before, _snapshot(utils.counters))
        except Exception as exc:
            unreadable.append(_failed("counters", exc))
            return None

    def _time_spent(self, utils: Any, unreadable: list[str]) -> dict[str, float] | None:
        if self._time_before is None:
            return None
        try:
            after = utils.calculate_time_spent()
        except Exception as exc:
            unreadable.append(_failed("calculate_time_spent", exc))
            return None
        spent = {}
        for phase, seconds in after.items():
            before = self._time_before.get(phase, 0.0)
            # torch._dynamo.reset() zeroes these totals; then all that is there was spent since the reset.
            value = seconds - before if seconds >= before else seconds
            if value > 0:
                spent[str(phase)] = _round(value)
        return spent

    def _graph_breaks(self, delta: dict[str, dict[str, int]] | None) -> dict[str, Any]:
        """Break sites (reason and file:line) with how often Dynamo met each, and the frames that ran eagerly.

        Dynamo files a break it could not resume from twice in `counters["unimplemented"]`: once alone and once
        inside the break that followed ("graph break in loop", which skips the whole frame). Each site counts
        once per meeting, so the larger of the two sources is taken per site, never their sum.
        """
        from_counters: dict[tuple[str, str | None], int] = {}
        eager: dict[str, dict[str, Any]] = {}
        for group in ("unimplemented", "graph_break"):
            for message, count in (delta or {}).get(group, {}).items():
                first, _, chained = message.partition(_CHAINED)
                traced = _TRACED_AT.search(first)
                site = (break_reason(first), f"{traced.group(1)}:{traced.group(2)}" if traced else None)
                # The same meeting filed alone and inside the chained break: the larger count, not the sum.
                from_counters[site] = max(from_counters.get(site, 0), count)
                skipped = _SKIPPED_FRAME.search(chained)
                if skipped and _EAGER_FRAME in chained:
                    function, where = skipped.group(1), f"{skipped.group(2)}:{skipped.group(3)}"
                    eager[function] = {"function": function, "at": where, "reason": break_reason(chained)}
        from_logs: dict[tuple[str, str | None], int] = {}
        logged_eager: dict[str, dict[str, Any]] = {}
        for reason, where, ran_eagerly in self._capture.graph_breaks:
            from_logs[(reason, where)] = from_logs.get((reason, where), 0) + 1
            if ran_eagerly:  # the log names the break's line, not the frame: used when the counters say nothing
                logged_eager.setdefault(str(where), {"break_at": where, "reason": reason})
        eager = eager or logged_eager
        # A counter message without a place is the same break as a logged one with the same reason.
        placed = {reason for reason, where in from_logs if where}
        sites: dict[tuple[str, str | None], int] = {}
        for key in dict.fromkeys([*from_counters, *from_logs]):
            if key[1] is None and key[0] in placed and key in from_counters and key not in from_logs:
                continue
            sites[key] = max(from_counters.get(key, 0), from_logs.get(key, 0))
        resumes = sorted((delta or {}).get("resumes", {}))
        result: dict[str, Any] = {
            # Each resume function (named after its function and line) is a break site that surely broke.
            "count": max(sum(sites.values()), len(resumes)),
            "sites": len(sites),
            "reasons": [
                {"reason": reason, "count": n, **({"at": where} if where else {})}
                for (reason, where), n in list(sites.items())[:MAX_REASONS]
            ],
        }
        if resumes:
            result["resume_functions"] = resumes[:MAX_REASONS]
        if eager:
            result["eager_frames"] = list(eager.values())[:MAX_REASONS]
        return result

    def _recompiles(self, records: list[Any] | None) -> dict[str, Any]:
        """One reason per recompile (the guard that failed, by function), from the compile records, else from the
        log records; a reason met again is listed again, so that a reader can count it."""
        reasons: list[str] = []
        for record in _forward(records or []):
            reason = getattr(record, "recompile_reason", None)
            lines = [line.strip() for line in str(reason or "").splitlines() if line.strip()]
            if lines:  # the newest entry's failed guard first, as in the log
                reasons.append(_recompile_reason(getattr(record, "co_name", None) or "?", lines[0]))
        count = max(len(reasons), self._capture.recompile_events)
        return {"count": count, "reasons": (reasons or self._capture.recompiles)[:MAX_REASONS]}


class _NeverImported:
    """Dynamo's bookkeeping in a process that never imported it: nothing compiled, nothing counted."""

    counters: ClassVar[dict[str, dict[str, int]]] = {}

    @staticmethod
    def get_compilation_metrics() -> list[Any]:
        return []

    @staticmethod
    def calculate_time_spent() -> dict[str, float]:
        return {}


def _forward(records: list[Any]) -> list[Any]:
    """The frame compiles: not the lazily compiled backward graphs, not the runtime-overhead records."""
    return [r for r in records if getattr(r, "is_forward", None) is not False and not getattr(r, "is_runtime", False)]


def _seconds(record: Any, *fields: str, scale: float = 1e-6) -> float | None:
    for name in fields:
        value = getattr(record, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _round(value * scale)
    return None


def _cache_verdict(record: Any, kind: str) -> str | None:
    hits = sum(getattr(record, f"{kind}_{where}_cache_hit_count", None) or 0 for where in ("local", "remote"))
    misses = sum(getattr(record, f"{kind}_{where}_cache_miss_count", None) or 0 for where in ("local", "remote"))
    if misses:
        return "miss"  # something in this frame compiled cold
    return "hit" if hits else None


def _frames_section(records: list[Any], unreadable: list[str]) -> dict[str, Any]:
    frames: list[dict[str, Any]] = []
    backward: dict[str, float] = {}
    for record in records:
        try:
            if getattr(record, "is_forward", None) is False and not getattr(record, "is_runtime", False):
                seconds = _seconds(record, "backward_cumulative_compile_time_us", "duration_us")
                key = str(getattr(record, "compile_id", None))
                if seconds is not None:
                    backward[key] = backward.get(key, 0.0) + seconds
        except Exception as exc:
            unreadable.append(_failed("backward compile record", exc))
    for record in _forward(records):
        try:
            frame = {
                "id": getattr(record, "compile_id", None),
                "function": getattr(record, "co_name", None),
                "compile_s": _seconds(record, "duration_us", "dynamo_cumulative_compile_time_us")
                or _seconds(record, "entire_frame_compile_time_s", scale=1.0),
                "dynamo_s": _seconds(record, "dynamo_cumulative_compile_time_us"),
                "aot_autograd_s": _seconds(record, "aot_autograd_cumulative_compile_time_us"),
                "backend_s": _seconds(record, "inductor_cumulative_compile_time_us"),
                "recompile_reason": _text(getattr(record, "recompile_reason", None)),
                "fx_cache": _cache_verdict(record, "inductor_fx"),
                "aot_cache": _cache_verdict(record, "aotautograd"),
            }
            if frame["id"] in backward:
                frame["backward_s"] = _round(backward[frame["id"]])
            if getattr(record, "fail_type", None):
                frame["fail_type"] = str(record.fail_type)
                frame["ran_eagerly"] = True  # Dynamo gave the frame up: it ran uncompiled (unless the error rose)
            frames.append(frame)
        except Exception as exc:
            unreadable.append(_failed("compile record", exc))

    def total(key: str) -> float | None:
        values = [f[key] for f in frames if isinstance(f.get(key), float)]
        return _round(sum(values)) if values else None

    stages = {
        name: total(key)
        for name, key in (
            ("dynamo", "dynamo_s"),
            ("aot_autograd", "aot_autograd_s"),
            ("backend", "backend_s"),
            ("backward", "backward_s"),
        )
    }
    section: dict[str, Any] = {
        "frames": frames[:MAX_FRAMES],
        "frame_count": len(frames),
        "compile_s": _round((total("compile_s") or 0.0) + (stages["backward"] or 0.0)),
        "compile_split_s": compile_split(frames),
        "stages_s": {name: value for name, value in stages.items() if value is not None},
        "stages_nested": True,
    }
    if len(frames) > MAX_FRAMES:
        section["frames_omitted"] = len(frames) - MAX_FRAMES
    return section


def _snapshot(counters: Any) -> dict[str, dict[str, int]]:
    """A copy of the counter groups this module reads; a group never incremented is simply absent."""
    snapshot = {}
    for group in COUNTER_GROUPS:
        values = counters.get(group) if isinstance(counters, Mapping) else counters[group]
        if values:
            snapshot[group] = {str(key): int(count) for key, count in dict(values).items()}
    return snapshot


@contextlib.contextmanager
def fresh_cache(folder: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """Compile truly cold inside: an empty inductor (and Triton) cache folder, and no in-process caches.

    Inductor reads TORCHINDUCTOR_CACHE_DIR whenever it needs the folder (cache_dir() in
    torch/_inductor/runtime/cache_dir_utils.py), so setting it works before or after torch is imported. What
    it keeps in memory is cleared on entry: the compiled-code caches keyed by source hash (CppCodeCache,
    PyCodeCache...) and memoised paths, all registered with torch._inductor.utils.clear_caches() (as torch's
    own fresh_cache does), and the frames dynamo already compiled (torch._dynamo.reset()), else a compiled
    frame would not compile again at all. Either is skipped when torch has not imported it: nothing is
    cached then. On exit only inductor's caches are cleared again (they point into this folder); what
    compiled inside stays compiled. The FX-graph and AOTAutograd caches live on disk under the folder.
    Inductor's precompiled C++ headers stay global (default_cache_dir(), fixed at import) by torch's design:
    they speed up a cold compile's C++ build, they are not a compiled graph.

    The environment is restored after; a temporary folder (the default) is removed, a given `folder` is
    kept and must be empty or absent.
    """
    if folder is None:
        path = Path(tempfile.mkdtemp(prefix="kb-inductor-cache-"))
    else:
        path = Path(folder).absolute()  # inductor would make it absolute in the environment itself
        if path.exists() and any(path.iterdir()):
            raise ValueError(f"{path} is not empty, so a compile there could hit its cache")
        path.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in CACHE_ENV}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path)
    os.environ["TRITON_CACHE_DIR"] = str(path / "triton")
    try:
        if "torch._dynamo" in sys.modules:
            sys.modules["torch._dynamo"].reset()
        _clear_inductor_caches()
        yield path
    finally:
        # Not dynamo again: what compiled inside stays compiled. Only inductor forgets paths into this folder.
        _clear_inductor_caches()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if folder is None:
            shutil.rmtree(path, ignore_errors=True)


def _clear_inductor_caches() -> None:
    inductor_utils = sys.modules.get("torch._inductor.utils")
    if inductor_utils is not None:
        inductor_utils.clear_caches()
