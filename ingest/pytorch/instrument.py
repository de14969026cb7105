"""The instrumented run: a few lines in a training or inference script make its entry tell the truth.

    from ingest.pytorch import run

    with run(workload="tiny-lm", backend="cuda", mode="compiled", device="cuda", tokens_per_step=512) as r:
        with r.phase("load"):
            model = build().to("cuda")
        for batch in data:
            with r.step():
                loss = step(model, batch)
            r.log("loss", loss)            # tensors are read back after timing, never inside a step

Preparation is kept apart from steady state (load, the first call with its compile, warm-up steps,
then the steady steps as median, p10 and p90), completion apart from acceleration (fallback warnings,
placement), speed next to correctness (`check_numerics`), and a failure is classified before it
propagates. Under `kb record` everything goes to the recorder through the run folder; elsewhere the
run writes its own run folder and, when a knowledge base is reachable, its entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from ingest import backend_evidence, handover, rank_summaries, steps
from ingest.frameworks.integration import curve_file, metric_names
from ingest.machine_load import LoadSampler, busy_note
from ingest.pytorch import device as devices
from ingest.pytorch import failures, numerics, ranks, xla_metrics
from ingest.pytorch.compile_evidence import CompileWatch
from ingest.pytorch.device_use import DeviceSampler
from ingest.pytorch.fallbacks import FallbackWatch, count_cpu_round_trips, placement_audit, verdict
from kb.model.entry import iso
from kb.terminal.plain import with_path

# Where a run outside `kb record` writes its run folder: this, else the knowledge base's cache (the folder is
# removed once its entry is written), else ./kb-runs when no knowledge base is reachable.
ENV_RUN_OUT = "KB_RUN_OUT"
DEFAULT_OUT = "kb-runs"
RANK_TIMEOUT_S = 60.0
FD2_LOG = "fd2.log"  # file descriptor 2 while the run ran, where a backend logs its fallbacks only there
PACKAGES = "packages.txt"  # every installed distribution, attached: the entry's versions keep the configured ones
SIGNIFICANT = 6
# What reading back the run's unsynced lazy tensors cost on XLA, after the run's own figures were taken: kb's, kept
# apart from the run's compile time and counters.
KB_READBACK = "kb_readback"


class CompileTimeout(Exception):
    """The first call (where compilation happens) ran past the run's compile budget."""


class RunTerminated(BaseException):
    """SIGTERM reached the run (a scheduler or torchrun stopping it); raised so the entry is still written."""


class Step:
    """The per-step timer. Reused for every step: entering and leaving costs a few microseconds."""

    __slots__ = ("_backend_compiles", "_began", "_compiles", "_run", "samples", "tokens")

    def __init__(self, owner: Run):
        self._run = owner
        self._began = 0.0
        self._compiles = 0
        self._backend_compiles: int | None = None
        self.tokens: int | None = None
        self.samples: int | None = None

    def __call__(self, tokens: int | None = None, samples: int | None = None) -> Step:
        self.tokens, self.samples = tokens, samples
        return self

    def __enter__(self) -> Step:
        owner = self._run
        owner._sync()
        if not owner._times and owner.compile_budget_s:
            owner._arm_budget()
        owner._in_step = True
        self._compiles = owner._compile.compiles
        counter = owner._backend_counter
        self._backend_compiles = counter() if counter is not None else None
        self._began = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        owner = self._run
        if exc_type is None:  # after a device error, a wait is the call that can abort the process
            owner._sync()
        now = time.perf_counter()
        elapsed = now - self._began
        owner._in_step = False
        if exc_type is not None:
            owner._failed_at = (owner._step_phase(), len(owner._times), exc)
        if not owner._times and owner.compile_budget_s:
            owner._disarm_budget(elapsed)
        if exc_type is None:
            index = len(owner._times)
            owner._times.append(elapsed)
            owner._ends.append(now - owner._origin)
            counter = owner._backend_counter
            if owner._compile.compiles != self._compiles or (  # this step compiled (a first call, a recompile)
                counter is not None and counter() != self._backend_compiles  # by the backend's own count
            ):
                owner._compiled.add(index)
                owner._pending.append(index)
            if self.tokens is not None or self.samples is not None:
                owner._sizes[index] = (self.tokens, self.samples)
                owner._pending.append(index)
            if now >= owner._flush_due or index - owner._flushed >= steps.FLUSH_STEPS:
                owner._flush(now)
        self.tokens = self.samples = None


class Run:
    def __init__(
        self,
        *,
        title: str | None = None,
        workload: str | None = None,
        backend: str | None = None,
        mode: str | None = None,
        device: str | torch.device | None = None,
        tags: tuple[str, ...] = (),
        settings: dict[str, Any] | None = None,
        tokens_per_step: int | None = None,
        samples_per_step: int | None = None,
        warmup_steps: int = 1,
        compile_budget_s: float | None = None,
        out: str | os.PathLike | None = None,
        note: str | None = None,
        synchronize: bool = True,
    ):
        if warmup_steps < 1:
            raise ValueError("warmup_steps counts the first call too, so it is at least 1")
        self.device_type = devices.accelerator_type(device)
        self.title, self.workload, self.backend, self.mode = title, workload, backend or self.device_type, mode
        self.tags, self.settings, self.note_text = tuple(tags), dict(settings or {}), note
        self.tokens_per_step, self.samples_per_step = tokens_per_step, samples_per_step
        self.warmup_steps, self.compile_budget_s = warmup_steps, compile_budget_s
        self._sync = devices.Sync(self.device_type, synchronize)
        self._backend_counter = devices.compile_counter(self.device_type)
        self._out = out
        self._times: list[float] = []
        self._ends: list[float] = []  # each step's end, in seconds since the run began
        self._compiled: set[int] = set()  # the steps during which something compiled
        self._sizes: dict[int, tuple[int | None, int | None]] = {}  # r.step(tokens=..., samples=...), by step
        self._streamed: dict[str, int] = {}  # per logged name, how many values the stream has
        self._flushed = 0  # how many steps the stream has
        self._pending: list[int] = []  # steps since the last flush that compiled or had their own sizes
        self._origin = time.perf_counter()
        self._flush_due = 0.0
        # Per name, the steps and the values in two flat lists: a list of (step, value) tuples makes the garbage
        # collector walk a million small objects in a long run, which costs more than the step timer itself.
        self._logs: dict[str, tuple[list[int], list[Any]]] = {}
        self._phases: dict[str, float] = {}
        self._memory: dict[str, float] = {}
        self._xla_phases: dict[str, dict[str, Any]] = {}  # per phase, what torch_xla's metrics counted in it
        self._xla_start: dict[str, tuple[int, float]] | None = None
        self._runtime_start_failed: dict[str, Any] | None = None
        self._caches: dict[str, Any] = {}
        self._phase: str | None = None
        self._in_step = False
        self._failed_at: tuple[str | None, int | None, BaseException] | None = None
        self._sections: dict[str, Any] = {}
        self._notes: list[str] = []
        self._compile = CompileWatch()
        self._fallbacks = FallbackWatch()
        self._placement: dict[str, Any] | None = None
        self._round_trips: dict[str, Any] | None = None
        self._previous_term: Any = None
        self._budget_previous: Any = None
        self.rank, self.world_size, self.local_rank = ranks.identity()
        self._kb = None if handover.run_dir() is not None else _reachable_knowledge_base()
        self.folder = self._folder()
        self._load = LoadSampler(self.folder)
        self._device_use = DeviceSampler(self.folder, self.device_type, self.rank)
        header = {
            "warmup_steps": warmup_steps, "tokens_per_step": tokens_per_step, "samples_per_step": samples_per_step,
            "rank": self.rank, "world_size": self.world_size,
        }  # fmt: skip
        self._stream = steps.StepStream(self.folder, header, self.rank)
        self.step = Step(self)

    # -- the context manager -------------------------------------------------------------------------------------
    def __enter__(self) -> Run:
        self.started = datetime.now(timezone.utc)
        self._clock = time.monotonic()
        self._origin = time.perf_counter()
        self._flush_due = self._origin + steps.FLUSH_S
        self._start_runtime()
        devices.reset_peak_memory(self.device_type)
        self._compile.start()
        self._fallbacks.start(self.folder / FD2_LOG, self.device_type)
        self._load.start()
        self._device_use.start()
        self._xla_start = xla_metrics.snapshot()
        self._caches = backend_evidence.cache_states(os.environ, self.backend)
        if threading.current_thread() is threading.main_thread():
            self._previous_term = signal.signal(signal.SIGTERM, _raise_terminated)
        rank_summaries.write_summary(self.folder, self._rank_summary("running"))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self._previous_term is not None:
            signal.signal(signal.SIGTERM, self._previous_term)
        status = "completed"
        if exc is not None:
            status = "interrupted" if isinstance(exc, (KeyboardInterrupt, RunTerminated)) else "failed"
            # Where it was raised (a step, a phase), when that is this very exception or one it came from.
            phase, step = self._phase, None
            if self._failed_at is not None and any(link is self._failed_at[2] for link in failures.chain(exc)):
                phase, step = self._failed_at[0], self._failed_at[1]
            self._sections["failure"] = failures.describe(exc, phase=phase, step=step, rank=self.rank)
            (self.folder / "traceback.txt").write_text("".join(traceback.format_exception(exc)))
        try:
            self._finish(status)
        except Exception as problem:  # the evidence must never replace the run's own outcome
            print(f"kb: could not write the run's evidence: {problem}", file=sys.stderr)

    # -- what a script calls ---------------------------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str):
        """Time a named stretch (load, data, checkpoint...): timings.<name>_s and its peak device memory."""
        previous, self._phase = self._phase, name
        devices.reset_peak_memory(self.device_type)
        self._sync()
        xla_before = xla_metrics.snapshot()
        began = time.perf_counter()
        try:
            yield
        except BaseException as exc:
            if self._failed_at is None or self._failed_at[2] is not exc:  # not already placed by a step inside
                self._failed_at = (name, None, exc)
            raise
        else:
            self._sync()  # not after a device error: there a wait is the call that can abort the process
        finally:
            self._phases[name] = self._phases.get(name, 0.0) + time.perf_counter() - began
            xla = xla_metrics.delta(xla_before, xla_metrics.snapshot())
            if xla:
                self._xla_phases[name] = xla
            peak = devices.peak_memory_gb(self.device_type)
            if peak is not None:
                self._memory[name] = peak
            self._phase = previous

    def log(self, name: str, value: Any, step: int | None = None) -> None:
        """Keep a value (a float or a 0-d tensor); tensors are read back once, when the run ends."""
        if step is None:  # the step being run, or the one just finished
            step = len(self._times) if self._in_step else max(len(self._times) - 1, 0)
        if getattr(value, "requires_grad", False):
            value = value.detach()  # keeps no autograd graph alive; the value itself is read when the run ends
        at, values = self._logs.get(name) or self._logs.setdefault(name, ([], []))
        at.append(step)
        values.append(value)

    def set(self, field: str, value: Any) -> None:
        """Set any entry field by dotted path, e.g. set('settings.dtype', 'bf16')."""
        self._sections[field] = value

    def note(self, text: str) -> None:
        self._notes.append(text)

    def audit(self, module: torch.nn.Module | None, outputs: Any) -> dict[str, Any]:
        """Where parameters, buffers and outputs live, against the run's device."""
        self._placement = placement_audit(module, outputs, self.device_type)
        return self._placement

    def profile_round_trips(self, fn: Any, steps: int = 3) -> dict[str, Any]:
        """Count host round trips in a short profiled window of `steps` calls of fn (outside the timed steps)."""
        self._round_trips = count_cpu_round_trips(fn, steps=steps, device=self.device_type)
        return self._round_trips

    def check_numerics(
        self,
        actual: Any,
        reference: Any,
        *,
        rtol: float | None = None,
        atol: float | None = None,
        name: str = "outputs",
    ) -> dict[str, Any]:
        """Compare outputs with a reference tensor or a saved file (.pt, or text of one number per line)."""
        source = None
        if isinstance(reference, (str, os.PathLike)):
            source = str(reference)
            reference = numerics.load_reference(Path(reference))
        result = numerics.compare(actual, reference, rtol=rtol, atol=atol, reference=source, what=name)
        self._sections["numerics"] = result
        return result

    def check_loss_curve(self, reference: Any, *, name: str = "loss", rtol: float = 0.05) -> dict[str, Any]:
        """Compare the logged curve `name` with a reference curve (a list or a file of one value per line)."""
        source = None
        if isinstance(reference, (str, os.PathLike)):
            source = str(reference)
            reference = numerics.load_reference(Path(reference))
        curve = [float(value) for _, value in self._read(name)]
        result = numerics.compare_curves(curve, [float(v) for v in reference], rtol=rtol, reference=source, name=name)
        self._sections["numerics"] = result
        return result

    def mfu(self, value: float, *, peak_flops: float, device: str | None = None) -> dict[str, Any]:
        """Record a model-FLOPs utilisation figure with the peak FLOP/s it was computed against, and whether that
        peak is the device's own (`device` as named in ingest.backend_evidence.KNOWN_PEAK_FLOPS, e.g. "H100 SXM")."""
        section = backend_evidence.mfu(value, peak_flops, device)
        self._sections["backend_evidence.mfu"] = section
        return section

    def save_outputs(self, name: str, tensor: torch.Tensor) -> Path:
        """Keep outputs beside the entry so that later runs can be checked against them."""
        path = self.folder / f"{name}.pt"
        torch.save(tensor.detach().to("cpu"), path)
        return path

    def summary(self) -> dict[str, Any]:
        """The run's figures so far, for the script's own printing: timings and every logged series."""
        return {"timings": self._timings(), "logs": {name: [v for _, v in self._read(name)] for name in self._logs}}

    # -- internals ---------------------------------------------------------------------------------------------------
    def _folder(self) -> Path:
        named = handover.run_dir()
        if named is not None:
            return named
        if self._out or os.environ.get(ENV_RUN_OUT):
            base = Path(self._out or os.environ[ENV_RUN_OUT])
        elif self._kb is not None:
            base = self._kb.ensure_cache() / "runs"
        else:
            base = Path(DEFAULT_OUT)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        # All ranks of one torchrun job must agree on one folder without talking: the job's id and port do.
        job = os.environ.get("TORCHELASTIC_RUN_ID") or os.environ.get("MASTER_PORT")
        name = f"run-{job}" if self.world_size > 1 and job else f"run-{stamp}-{os.getpid()}"
        folder = base / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _step_phase(self) -> str:
        """Where the step being run stands: the first call, warm-up, or steady state (or a named phase around it)."""
        if self._phase is not None:
            return self._phase
        count = len(self._times)
        return "first_step" if count == 0 else "warmup" if count < self.warmup_steps else "steady"

    def _read(self, name: str) -> list[tuple[int, Any]]:
        at, values = self._logs.get(name, ([], []))
        return list(zip(at, _values(values), strict=True))

    def _start_runtime(self) -> None:
        """The device runtime's start-up as its own phase (`runtime_start_s`), where the backend says its runtime
        has not started: else the first phase or step to touch the device holds it (libtpu's start-up takes
        minutes off Google Cloud). A start that fails is kept as evidence, never raised: the run's own first
        device tensor meets the same failure, as the run's.

        The start is a copy of one number to the device, the one way found to raise rather than abort: where
        libtpu cannot start, TorchTPU aborts the process from an operator run on the device (`torch.zeros(1,
        device="tpu")`) or from synchronize, while a copy raises "failed to transfer to 'tpu' device: ..."
        (and fails at once the second time, so the run's own first copy does not wait again)."""
        if devices.runtime_started(self.device_type) is not False:
            return
        began = time.perf_counter()
        try:
            torch.zeros(1).to(self.device_type)
        except Exception as exc:
            found = failures.describe(exc, phase="runtime_start", step=None, rank=None)
            kept = ("class", "message", "explanation")
            self._runtime_start_failed = {key: found[key] for key in kept if key in found}
            self._notes.append(f"The {self.device_type} runtime did not start: {found['message']}")
        self._phases["runtime_start"] = time.perf_counter() - began

    def _arm_budget(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        budget = self.compile_budget_s

        def expire(signum: int, frame: Any) -> None:
            raise CompileTimeout(f"the first call ran past the compile budget of {budget} s")

        self._budget_previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, budget)

    def _disarm_budget(self, elapsed: float) -> None:
        if self._budget_previous is None:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._budget_previous)
        self._budget_previous = None

    def _timings(self) -> dict[str, Any]:
        timings: dict[str, Any] = {f"{name}_s": _round(seconds) for name, seconds in self._phases.items()}
        timings.update(steps.timings(self._times, self.warmup_steps, self._compiled))
        return timings

    def _throughput(self) -> dict[str, dict[str, Any]]:
        return steps.throughput(
            self._times, self._ends, self.warmup_steps, self._compiled, self._sizes,
            (self.tokens_per_step, self.samples_per_step), self.world_size,
        )  # fmt: skip

    def _flush(self, now: float, final: bool = False) -> None:
        """Into the run folder: the steps and values since the last flush, and this rank's summary so far. Before
        the end (`final`), a logged lazy tensor still waiting for its graph waits here too (_unread)."""
        try:
            self._flush_stream(now, final)
        except Exception as exc:  # a value that cannot be read back, say: the stream stops, the run goes on
            self._stream.failed = f"{type(exc).__name__}: {exc}"
            self._flush_due = float("inf")

    def _flush_stream(self, now: float, final: bool) -> None:
        timed = now >= self._flush_due  # else a full buffer of steps: the summary waits for its time
        start, end = self._flushed, len(self._times)
        lines = []
        for index in dict.fromkeys(self._pending):  # what only some steps have: a compile, their own sizes
            extra: dict[str, Any] = {"compiled": True} if index in self._compiled else {}
            tokens, samples = self._sizes.get(index, (None, None))
            extra.update({k: v for k, v in (("tokens", tokens), ("samples", samples)) if v is not None})
            lines.append(json.dumps({"step": index, **extra}) + "\n")
        self._pending.clear()
        for name, (at, values) in self._logs.items():
            done = self._streamed.get(name, 0)
            until = len(values) if final else _unread(values, done)
            if done < until:
                read = _values(values[done:until])
                lines.append(json.dumps({"log": name, "steps": at[done:until], "values": read}, default=str) + "\n")
                self._streamed[name] = until
        self._stream.write(lines, self._times[start:end], self._ends[start:end])
        self._flushed = end
        if timed:
            self._flush_due = now + steps.FLUSH_S
            with contextlib.suppress(OSError):  # a full disk costs the summary, never the run
                rank_summaries.write_summary(self.folder, self._rank_summary("running"))

    def _rank_summary(self, status: str) -> dict[str, Any]:
        """This rank's summary; while it runs, only what costs nothing to know (figures over every step come
        at the end: computing them at each flush would make a long run's flushes grow with its length)."""
        summary = {
            "rank": self.rank, "local_rank": self.local_rank, "world_size": self.world_size, "status": status,
            "host": os.uname().nodename, "pid": os.getpid(), "device": self.device_type, "steps": len(self._times),
            "first_step_s": _round(self._times[0]) if self._times else None,
            "elapsed_s": _round(self._ends[-1]) if self._ends else None,
        }  # fmt: skip
        if status == "running":
            return summary
        step_s = steps.timings(self._times, self.warmup_steps, self._compiled).get("step_s") or {}
        summary["step_s_median"] = step_s.get("median")
        for name, metric in self._throughput().items():
            if not name.endswith("_median_step"):
                summary[name] = metric["value"]
        return summary

    def _finish(self, status: str) -> None:
        ended = datetime.now(timezone.utc)
        # The run's own evidence is taken first: reading back what it logged and never synced runs that value's
        # graph (a compile and an execution on XLA), which is kb's doing, not the run's; it is kept apart.
        compile_section = self._compile.stop()
        fallback_watch = self._fallbacks.stop()
        xla_end = xla_metrics.snapshot()
        self._flush(time.perf_counter(), final=True)
        readback = xla_metrics.delta(xla_end, xla_metrics.snapshot()) if xla_end is not None else {}
        self._stream.close()
        if self._stream.failed:
            self._notes.append(f"The step stream stopped ({self._stream.failed}): a kill would have lost the steps.")
        sections: dict[str, Any] = {}
        timings = self._timings()
        self._compile_sections(compile_section, timings, sections)
        self._sync_and_fallbacks(fallback_watch, timings, sections)
        sections["memory"] = self._memory_section()
        sections["settings"] = {**self.settings, "device": self.device_type, **devices.threads()}
        load = self._load.stop()
        if load:
            sections["hardware.load"] = load
            warning = busy_note(load)
            if warning:
                self._notes.append(warning)
        evidence = self._backend_evidence(xla_metrics.delta(self._xla_start, xla_end), readback, timings)
        if evidence:
            sections["backend_evidence"] = evidence
        sections.update(self._identity_sections())
        summaries = ranks.gather(self._rank_summary(status), self.folder, RANK_TIMEOUT_S)
        if summaries is None:
            return  # not rank 0: rank 0 writes the entry
        if self.world_size > 1:
            sections["ranks"] = rank_summaries.section(summaries, self.world_size)
        self._write(status, ended, sections)

    def _compile_sections(self, compile_section: dict[str, Any], timings: dict[str, Any],
                          sections: dict[str, Any]) -> None:  # fmt: skip
        """The compile section, steps that compiled after warm-up, and a numerics failure as the run's failure."""
        later = [index for index in sorted(self._compiled) if index >= self.warmup_steps]
        if later:  # by Dynamo's count or the backend's own (XLA's CompileTime, TorchTPU's cache misses)
            self._notes.append(
                f"{len(later)} step{'s' if len(later) > 1 else ''} after warm-up compiled (steps "
                f"{', '.join(map(str, later[:10]))}): kept out of the steady-state figures."
            )
        if compile_section.get("frame_count"):
            if self._compiled:
                compile_section["compiling_steps"] = sorted(self._compiled)[:200]
            sections["compile"] = compile_section
            timings.setdefault("compile_s", compile_section.get("compile_s"))
            if "compile_source" in compile_section:  # the backend compiled outside Dynamo's metrics too
                timings.setdefault("compile_source", compile_section["compile_source"])
        elif self.mode == "compiled":
            sections["compile"] = {**compile_section, "frame_count": 0, "nothing_compiled": True}
            self._notes.append("The run says mode `compiled`, but torch.compile compiled nothing while it ran.")
        numerics_section = self._sections.get("numerics")
        if isinstance(numerics_section, dict) and numerics_section.get("verdict") == "fail":
            # The run completed; its result is not to be trusted. The class says so to filters and the board.
            self._sections.setdefault("failure", numerics.failure(numerics_section))

    def _sync_and_fallbacks(self, fallback_watch: Any, timings: dict[str, Any], sections: dict[str, Any]) -> None:
        """How the steps waited for the device, and whether the work stayed on it."""
        if self._sync.method is not None:
            timings["device_sync"] = self._sync.outcome()
        if self._sync.refused:
            refused = "; ".join(self._sync.refused)
            self._notes.append(f"Device sync refused: {refused}. Steps were timed with {self._sync.method}.")
        sections["timings"] = timings
        sections["fallbacks"] = verdict(self.device_type, fallback_watch, self._placement, self._round_trips)
        compile_backend = sections["fallbacks"].get("compile_backend")
        if compile_backend is not None and not compile_backend["ran"]:
            self._notes.append(compile_backend["summary"])

    def _memory_section(self) -> dict[str, Any]:
        memory = {f"device_peak_gb_{phase}": gb for phase, gb in self._memory.items()}
        peak = devices.peak_memory_gb(self.device_type)
        if peak is not None:
            memory["device_peak_gb"] = peak
        memory["host_peak_rss_gb"] = devices.host_peak_rss_gb()
        memory["device_over_time"] = self._device_use.stop()
        return memory

    def _backend_evidence(self, xla_run: dict[str, Any], readback: dict[str, Any],
                          timings: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
        """What the backend's own counters and caches say; XLA's compile time becomes the run's."""
        evidence: dict[str, Any] = {}
        if xla_run or self._xla_phases or readback:
            evidence["xla_metrics"] = {
                "run": xla_run,
                **self._xla_phases,
                **({KB_READBACK: readback} if readback else {}),
            }
        if "CompileTime_s" in xla_run:
            # XLA compiles the graphs itself (lazily, or behind torch.compile's openxla backend, where Dynamo's
            # own time is the smaller part): the backend's count is the run's compile time.
            timings["compile_s"] = xla_run["CompileTime_s"]
            timings["compile_source"] = "torch_xla CompileTime"
        if self._runtime_start_failed is not None:
            evidence["runtime_start"] = self._runtime_start_failed
        counters = devices.compile_cache_counters(self.device_type)
        if counters is not None:
            evidence["torch_tpu_cache_counters"] = counters
        if self._caches:
            evidence["caches"] = self._caches
            if self._caches.get("neuron", {}).get("precompile_run"):
                self._notes.append(
                    "A neuron_parallel_compile run: it extracts and compiles graphs, so its timings are not results."
                )
        return evidence

    def _identity_sections(self) -> dict[str, Any]:
        """What ran: the ISA, versions (and the whole package list as a file), precision, the device."""
        sections: dict[str, Any] = {}
        isa = devices.cpu_isa()
        if isa:
            sections["hardware.cpu_isa"] = isa
        with contextlib.suppress(OSError):
            (self.folder / PACKAGES).write_text(devices.package_list())
        sections["versions"] = devices.versions()
        sections["precision"] = devices.precision()
        sections["hardware.torch_device"] = devices.identity(self.device_type)
        notes = devices.backend_notes()
        if notes:
            sections["hardware.backend_notes"] = notes
        return sections

    def _write(self, status: str, ended: datetime, sections: dict[str, Any]) -> None:
        folder = self.folder
        for name, entry_name in metric_names(self._logs).items():
            values = self._read(name)
            with open(folder / curve_file(entry_name), "w") as handle:  # the whole curve, one value per line
                handle.writelines(f"{value}\n" for _, value in values)
            if values:
                step, last = values[-1]
                number = last if isinstance(last, (int, float)) and not isinstance(last, bool) else None
                handover.metric(entry_name, _round(number), step=step, folder=folder)
        for name, metric in self._throughput().items():
            handover.metric(
                name, metric["value"], metric["unit"], better="higher", phase="steady",
                per_rank=metric.get("per_rank"), folder=folder,
            )  # fmt: skip
        if self.world_size > 1 and self._throughput():
            self._notes.append(f"Throughput figures are rank 0's own, one of {self.world_size} ranks (per_rank).")
        for field, value in {**self._identity(), **sections, **self._sections}.items():
            if field in ("timings", "settings", "versions") and isinstance(value, dict):
                for key, item in value.items():
                    if item is not None:
                        handover.set_field(f"{field}.{key}", item, folder=folder)
            else:
                handover.set_field(field, value, folder=folder)
        for text in ([self.note_text] if self.note_text else []) + self._notes:
            handover.note(text, folder=folder)
        if handover.run_dir() is not None:
            return  # `kb record` owns the entry: it folds these events in when the command ends
        self._manifest(status, ended)
        if self._kb is None:
            print(
                f"kb: no knowledge base here; the run is in {folder}: record it with `kb record --from {folder}`",
                file=sys.stderr,
            )
            return
        from ingest.after import AfterTheFact, record_after
        from ingest.describe import RunInfo

        entry = record_after(self._kb, RunInfo(), AfterTheFact(from_dir=folder))
        shutil.rmtree(folder)  # copied into the entry's attachments: the cache copy has done its job
        print(with_path(f"kb: recorded {entry.id} ({entry.status})", entry.path), file=sys.stderr)

    def _identity(self) -> dict[str, Any]:
        """Who the run says it is, for the entry (under `kb record`, options given to it win)."""
        named = {
            "title": self.title,
            "workload": {"name": self.workload} if self.workload else None,
            "backend": self.backend,
            "mode": self.mode,
            "tags": list(self.tags) or None,
        }
        return {field: value for field, value in named.items() if value is not None}

    def _manifest(self, status: str, ended: datetime) -> None:
        """run.json: what this run knows about itself, for `kb record --from` (here or on another machine)."""
        from ingest import environment

        argv = [sys.executable, *sys.argv]
        captured = environment.capture(Path.cwd(), argv)
        manifest = {
            "title": self.title or " ".join(p for p in (self.workload, self.backend, self.mode) if p) or sys.argv[0],
            "status": status,
            "tags": list(self.tags) or None,
            "workload": {"name": self.workload} if self.workload else None,
            "backend": self.backend,
            "mode": self.mode,
            "command": {"argv": argv, "line": " ".join(argv), "cwd": str(Path.cwd()), "python": sys.executable},
            "versions": captured.get("versions"),
            "hardware": captured.get("hardware"),
            "environment": captured.get("environment"),
            "git": {k: v for k, v in (captured.get("git") or {}).items() if k != "diff"} or None,
            "timings": {
                "started": iso(self.started),
                "ended": iso(ended),
                "wall_s": _round(time.monotonic() - self._clock),
            },
        }
        path = self.folder / "run.json"
        path.write_text(json.dumps({k: v for k, v in manifest.items() if v is not None}, indent=2, default=str))


def run(**options: Any) -> Run:
    """Start an instrumented run; use it as a context manager. See the module docstring."""
    return Run(**options)


def _reachable_knowledge_base() -> Any:
    """The knowledge base this run can write its entry to ($KB_HOME, or upward from here), or None."""
    from kb.errors import KbError
    from kb.store.knowledge_base import KnowledgeBase

    try:
        return KnowledgeBase.find()
    except KbError:
        return None


def _raise_terminated(signum: int, frame: Any) -> None:
    raise RunTerminated("SIGTERM")


def _unread(values: list[Any], start: int) -> int:
    """How far from `start` the logged values can be read back now: up to the first lazy tensor whose graph has
    not run (the run logged it and has not synced since). Reading it would run that graph, on kb's account and in
    the middle of the run; the run's next sync runs it as part of the run's own graph, or the end reads it once
    the run's own figures are taken."""
    if "_XLAC" not in sys.modules:  # no lazy tensors without torch_xla: nothing to look at, per value
        return len(values)
    for index in range(start, len(values)):
        if _lazy_pending(values[index]):
            return index
    return len(values)


def _lazy_pending(value: Any) -> bool:
    """Whether a value is a torch_xla tensor with a pending graph: its IR is an operation, not nothing (`IR: None`)
    or the device data it was run to (`IR: [...] xla::device_data, ...` once another graph refers to it)."""
    if not isinstance(value, torch.Tensor) or value.device.type != "xla":
        return False
    xlac = sys.modules.get("_XLAC")
    try:
        info = xlac._get_xla_tensor_debug_info(value)  # type: ignore[union-attr]
    except Exception:  # no way to tell: read it at the end, where a graph of its own costs the run nothing
        return True
    for line in info.splitlines():
        if line.startswith("IR: "):
            root = line[len("IR: ") :].split(",", 1)[0]
            return root != "None" and not root.endswith("xla::device_data")
    return True


def _values(values: list[Any]) -> list[Any]:
    """Many logged values read back at once: 0-d tensors are copied to the host, then stacked and read there in one
    call (a read per value costs more than the step timer itself). Nothing runs on the run's device but the copy
    every backend has: an operator there (stacking on the device) would be a compile on XLA and a CPU fallback on a
    backend without it, counted against the run."""
    if len(values) > 1 and all(isinstance(value, torch.Tensor) and value.dim() == 0 for value in values):
        try:
            return torch.stack([value if value.is_cpu else value.to("cpu") for value in values]).tolist()
        except Exception:  # a value that cannot be read back (a device error): one by one
            pass
    return [_value(value) for value in values]


def _value(value: Any) -> Any:
    """A logged value as a number: a tensor is read back here (once, at a flush or at the end), never in a step,
    by a copy to the host (`item()` on the device is an operator some backends lack); one that cannot be read back
    (not one number, a device error) is kept as None rather than failing the run."""
    if not hasattr(value, "item"):
        return value
    try:
        return (value.to("cpu") if isinstance(value, torch.Tensor) else value).item()
    except Exception:
        return None


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.{SIGNIFICANT}g}")
