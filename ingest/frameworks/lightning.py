"""Lightning: a Logger that records the fit as an entry, and the callback that times its steps.

    from ingest.frameworks.lightning import KbLogger

    trainer = Trainer(max_steps=1000, logger=KbLogger(workload="resnet18"))

A logger sees metrics, not steps, so KbTimer (a callback) does the timing. kb's `lightning.pytorch.
callbacks_factory` entry point adds one to every Trainer; it binds to the Trainer's KbLogger at setup
and does nothing in a Trainer without one (pass `callbacks=[KbTimer()]` where entry points are not
loaded). The run starts at on_fit_start; each training batch is a step (on_train_batch_start to
on_train_batch_end); validation is the "evaluate" phase; on_train_start to on_train_end is `timings.train_s`;
log_metrics gives metrics with curves, log_hyperparams settings; finalize ends the run, with the exception
on_exception saw when it failed.
"""

from __future__ import annotations

import sys
import time
from argparse import Namespace
from typing import Any

from lightning.pytorch import Callback
from lightning.pytorch.loggers import Logger
from lightning.pytorch.utilities.data import extract_batch_size

from ingest.frameworks.integration import Guarded, TrainingStopped, guarded, loggable, metric_name

_NOT_METRICS = {"epoch"}


class KbLogger(Logger, Guarded):
    def __init__(self, **options: Any):
        Logger.__init__(self)
        Guarded.__init__(self)
        self.options = options
        self.run: Any = None
        self.timer: KbTimer | None = None
        self._hyperparams: dict[str, Any] = {}
        self._exception: BaseException | None = None
        self._evaluating: Any = None

    @property
    def name(self) -> str:
        return "kb"

    @property
    def version(self) -> str:
        return self.run.folder.name if self.run is not None else "pending"

    @guarded
    def log_hyperparams(self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        params = vars(params) if isinstance(params, Namespace) else dict(params)
        self._hyperparams.update(_flat(params))
        if self.run is not None:
            self.run.settings.update(self._hyperparams)

    @guarded
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if self.run is None:
            return
        for name, value in metrics.items():
            kept = loggable(value)
            if kept is not None and name not in _NOT_METRICS:
                self.run.log(metric_name(name), kept, step=step)

    @guarded
    def finalize(self, status: str) -> None:
        run, self.run = self.run, None
        if run is None:
            return
        run.finish(self._exception if status == "failed" else None)

    # -- what KbTimer calls ---------------------------------------------------------------------------------------
    def begin(self, trainer: Any, pl_module: Any) -> None:
        from ingest.pytorch.start import start

        options = {
            "device": trainer.strategy.root_device,
            "mode": "compiled" if _compiled(pl_module) else "eager",
            **self.options,
            "settings": {**_trainer_settings(trainer), **self._hyperparams, **self.options.get("settings", {})},
        }
        self.run = start(**options)
        self.run.unfinished = TrainingStopped("the fit stopped before the logger's finalize")
        self.noted_so_far()


class KbTimer(Callback, Guarded):
    """Times the training steps and validation for the Trainer's KbLogger."""

    def __init__(self) -> None:
        Guarded.__init__(self)
        self.logger: KbLogger | None = None
        self._train_began: float | None = None

    @guarded
    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        found = next((logger for logger in trainer.loggers if isinstance(logger, KbLogger)), None)
        if found is not None and found.timer in (None, self):  # one timer per logger, when two are added
            found.timer, self.logger = self, found

    @property
    def run(self) -> Any:  # where Guarded notes a problem of this callback's hooks
        return self.logger.run if self.logger is not None else None

    @run.setter
    def run(self, value: Any) -> None:
        pass

    @guarded
    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        if self.logger is not None:
            self.logger.begin(trainer, pl_module)
            for text in self.problems.values():  # this callback's own, from setup
                self.logger.run.note(text)

    @guarded
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._train_began = time.perf_counter()

    @guarded
    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.run is not None and self._train_began is not None:  # as the Trainer of transformers has train_s
            self.run.set("timings.train_s", round(time.perf_counter() - self._train_began, 3))

    @guarded
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.run is not None:
            self.run.begin_step()

    @guarded
    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        run = self.run
        if run is None:
            return
        run.end_step()
        if run.samples_per_step is None:  # the first batch tells the size of all (the last may be smaller)
            run.samples_per_step = extract_batch_size(batch)
            run.tokens_per_step = run.tokens_per_step or _tokens(batch)

    @guarded
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if self.run is not None and self.logger._evaluating is None:
            self.logger._evaluating = self.run.phase("evaluate")
            self.logger._evaluating.__enter__()

    @guarded
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        evaluating, self.logger._evaluating = self.logger._evaluating, None
        if evaluating is not None:
            evaluating.__exit__(None, None, None)

    @guarded
    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self.logger is not None:
            self.logger._exception = exception  # finalize("failed") comes next and ends the run with it


def callbacks() -> list[Callback]:
    """kb's `lightning.pytorch.callbacks_factory` entry point: a KbTimer for every Trainer (idle without KbLogger)."""
    return [KbTimer()]


def _compiled(pl_module: Any) -> bool:
    """Whether the module, or a part of it, went through torch.compile (or .compile(), which compiles in place)."""
    if getattr(pl_module, "_compiler_ctx", None):  # Lightning's mark on a module fitted as torch.compile(module)
        return True
    frames = sys.modules.get("torch._dynamo.eval_frame")  # not imported: nothing was compiled
    if frames is None:
        return False
    return any(
        isinstance(part, frames.OptimizedModule) or getattr(part, "_compiled_call_impl", None) is not None
        for part in pl_module.modules()
    )


def _trainer_settings(trainer: Any) -> dict[str, Any]:
    settings = {
        "precision": str(trainer.precision),
        "accumulate_grad_batches": trainer.accumulate_grad_batches,
        "world_size": trainer.world_size,
        "max_steps": trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None,
        "strategy": type(trainer.strategy).__name__,
    }
    return {key: value for key, value in settings.items() if value is not None}


def _tokens(batch: Any) -> int | None:
    """Token ids (a 2-d integer tensor first in the batch) say the tokens a step; other data has none."""
    first = batch[0] if isinstance(batch, (list, tuple)) and batch else batch
    if isinstance(first, dict):
        first = first.get("input_ids")
    dtype = str(getattr(first, "dtype", ""))
    if getattr(first, "ndim", 0) == 2 and ("int" in dtype or "long" in dtype):
        return int(first.numel())
    return None


def _flat(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested hyperparameters as flat settings ("optimizer_lr": a dot would nest the field); others as text."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, f"{name}_"))
        elif value is None or isinstance(value, (bool, int, float, str)):
            flat[name] = value
        else:
            flat[name] = str(value)
    return flat
