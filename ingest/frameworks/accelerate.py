"""Accelerate: a tracker that records the training as an entry, for `Accelerator(log_with=...)`.

    from ingest.frameworks.accelerate import KbTracker

    accelerator = Accelerator(log_with=KbTracker(workload="tiny-lm"))
    model, optimizer, data = accelerator.prepare(model, optimizer, data)
    accelerator.init_trackers("tiny-lm", config={"lr": 1e-3})     # the run starts; config becomes settings
    ...
        accelerator.log({"loss": loss}, step=step)                  # once a step, as usual
    accelerator.end_training()                                      # the run ends

Accelerate tells a tracker of no step, only of what is logged, so a step is the time from one step's log
to the next one's (the first from init_trackers, best called just before the loop, to the first log: with
torch.compile, the compile), on
the same timer as `r.step()`; `tracker.run` is the run itself for finer timing. Accelerate calls trackers
on the main process only, so the entry has the main process's figures.
"""

from __future__ import annotations

from typing import Any

from accelerate.tracking import GeneralTracker

from ingest.frameworks.integration import Guarded, TrainingStopped, guarded, loggable, metric_name

_NO_STEP = object()


class KbTracker(GeneralTracker, Guarded):
    name = "kb"
    requires_logging_directory = False

    def __init__(self, **options: Any):
        Guarded.__init__(self)
        self.options = options
        self.run: Any = None
        self._step: Any = _NO_STEP
        GeneralTracker.__init__(self)

    @property
    def tracker(self) -> Any:
        return self.run

    @guarded
    def start(self) -> None:
        from accelerate.state import AcceleratorState

        from ingest.pytorch.start import start

        state = AcceleratorState()
        plugin = getattr(state, "dynamo_plugin", None)
        backend = str(getattr(getattr(plugin, "backend", None), "value", "no")).lower()
        options = {
            "device": state.device,
            "mode": "eager" if backend == "no" else "compiled",
            **self.options,
            "settings": {
                "mixed_precision": str(state.mixed_precision),
                "num_processes": state.num_processes,
                **({"compile_backend": backend} if backend != "no" else {}),
                **self.options.get("settings", {}),
            },
        }
        self.run = start(**options)
        self.run.unfinished = TrainingStopped("the training stopped before end_training")
        self.noted_so_far()
        self.run.begin_step()

    @guarded
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.settings.update({key: value for key, value in values.items() if _scalar(value)})

    @guarded
    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        run = self.run
        if run is None:
            return
        for name, value in values.items():
            kept = loggable(value)
            if kept is not None:
                run.log(metric_name(name), kept, step=step)
        if step is None or step != self._step:  # a new step's figures: the step before them has ended
            self._step = step
            run.end_step()
            run.begin_step()

    @guarded
    def finish(self) -> None:
        run, self.run = self.run, None
        if run is not None:
            run.abandon_step()  # from the last log to the end is no step
            run.finish()


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))
