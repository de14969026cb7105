"""Hugging Face Trainer: one callback records the training as an entry.

    from ingest.frameworks.hf import KbCallback

    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[KbCallback(workload="gpt2-small")])

The run starts at on_train_begin and ends at on_train_end (or at an uncaught error, SIGTERM or the end of
the process: ingest.pytorch.start). Each optimizer step is timed from on_step_begin to on_step_end (with
gradient accumulation, all its micro-batches), so the first step (with torch_compile, the compile) and
warm-up stay apart from steady state. on_log gives the loss, learning rate and evaluation figures as
metrics with their curves; evaluation (from the step that asks for it to on_evaluate) is the run's
"evaluate" phase. The TrainingArguments that decide speed
become settings; tokens per step are the Trainer's own count of the batch's tokens when
include_num_input_tokens_seen is on, else the batch's samples times the length of the first example.
Takes the options of `ingest.pytorch.run` (workload, backend, tags, warmup_steps...); what the Trainer
knows (device, mode, batch sizes) fills in what they leave out.
"""

from __future__ import annotations

import re
import time
from typing import Any

from transformers import TrainerCallback

from ingest.frameworks.integration import Guarded, TrainingStopped, guarded, loggable, metric_name

# The Trainer's end-of-training summary and figures of its own timing: the entry has better ones.
_NOT_METRICS = re.compile(r"(\A(epoch|total_flos)\Z)|(_runtime|_per_second)\Z")


class KbCallback(TrainerCallback, Guarded):
    def __init__(self, **options: Any):
        Guarded.__init__(self)
        self.options = options
        self.run: Any = None
        self._evaluating: Any = None  # the run's "evaluate" phase while the Trainer evaluates
        self._seen = 0  # the Trainer's count of input tokens at the last step's end
        self._began = 0.0

    @guarded
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        from ingest.pytorch.start import start

        dataset = getattr(kwargs.get("train_dataloader"), "dataset", None)
        seq = _sequence_length(dataset, getattr(model, "main_input_name", "input_ids"))
        samples = args.per_device_train_batch_size * args.gradient_accumulation_steps
        options = {
            "device": args.device,
            "mode": "compiled" if args.torch_compile else "eager",
            "samples_per_step": samples,
            "tokens_per_step": samples * seq if seq else None,
            **self.options,
            "settings": {**_settings(args, seq), **self.options.get("settings", {})},
        }
        self.run = start(**options)
        self.run.unfinished = TrainingStopped("the Trainer stopped before on_train_end")
        self.noted_so_far()
        self._seen = state.num_input_tokens_seen
        self._began = time.perf_counter()

    @guarded
    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            self.run.begin_step()

    @guarded
    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            self.run.end_step(tokens=self._tokens_this_step(args, state))
            self._before_evaluating(control)

    @guarded
    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._before_evaluating(control)

    @guarded
    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.run is None:
            return
        for name, value in (logs or {}).items():
            kept = loggable(value)
            if kept is not None and not _NOT_METRICS.search(name):
                self.run.log(metric_name(name), kept, step=state.global_step)

    @guarded
    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        evaluating, self._evaluating = self._evaluating, None
        if evaluating is not None:
            evaluating.__exit__(None, None, None)

    @guarded
    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        run, self.run = self.run, None
        if run is None:
            return
        run.set("timings.train_s", round(time.perf_counter() - self._began, 3))
        run.set("settings.steps", state.global_step)
        run.finish()

    def _tokens_this_step(self, args: Any, state: Any) -> int | None:
        """With include_num_input_tokens_seen on, the Trainer counts the tokens of every batch (across ranks): this
        step's share of one rank, where data of many lengths makes the first example's length a poor guess."""
        if args.include_num_input_tokens_seen in ("no", False, None):
            return None
        seen, self._seen = state.num_input_tokens_seen - self._seen, state.num_input_tokens_seen
        return seen // max(args.world_size, 1) or None

    def _before_evaluating(self, control: Any) -> None:
        """The Trainer evaluates right after this hook when its flow callback (called first) said so: time it as
        the run's "evaluate" phase, so that an error during evaluation is placed there."""
        if self.run is not None and control.should_evaluate and self._evaluating is None:
            self._evaluating = self.run.phase("evaluate")
            self._evaluating.__enter__()


def _settings(args: Any, seq: int | None) -> dict[str, Any]:
    """The TrainingArguments that decide what a step costs."""
    dtype = "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"
    settings = {
        "batch": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "seq": seq,
        "dtype": dtype,
        "world_size": args.world_size,
        "learning_rate": args.learning_rate,
        "optim": getattr(args.optim, "value", str(args.optim)),
        "seed": args.seed,
        "torch_compile": args.torch_compile,
    }
    if args.torch_compile:
        settings["torch_compile_backend"] = args.torch_compile_backend or "inductor"
        settings["torch_compile_mode"] = args.torch_compile_mode
    return {key: value for key, value in settings.items() if value is not None}


def _sequence_length(dataset: Any, input_name: str) -> int | None:
    """The length of the first training example's input: tokens per sample (for data of one length)."""
    try:
        first = dataset[0][input_name]
    except Exception:  # an iterable dataset, or examples without that input: no tokens/s then
        return None
    shape = getattr(first, "shape", None)
    length = shape[-1] if shape else len(first) if hasattr(first, "__len__") else None
    return int(length) if length else None
