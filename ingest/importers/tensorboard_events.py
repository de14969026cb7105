"""TensorBoard event files (torchtitan, Lightning, SummaryWriter) as run entries, read with tensorboard's own reader.

Every folder under DIR that holds event files is one run: its scalars become metrics (the last value
and its step) with their whole curves attached (`metric-<name>.txt`, one value a line), and the
times the first and last events were written become the run's start and end. A file cut short or
corrupt keeps the events read before the damage; the problem is reported by file and event count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.frameworks.integration import curve_file, metric_names
from ingest.importers.imported import Imported
from ingest.importers.regular import is_regular, kind_of, refuse_irregular
from ingest.importers.timestamps import from_epoch
from kb.errors import KbError
from kb.model.entry import iso

METRICS_KEPT = 200


@dataclass
class Scalars:
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # tag: (step, value) in file order
    first: float | None = None  # wall times of the first and last event
    last: float | None = None
    events: int = 0
    bad_time: str | None = None  # why an event's wall_time is no time: the run then has no start and end


def read_tensorboard(root: Path, workdir: Path) -> tuple[list[Imported], list[str]]:
    """One Imported per run folder under root, and one line per file that could not be read whole."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise KbError("kb ingest tensorboard needs TensorBoard: pip install 'kb[tensorboard]'") from None
    if not root.exists():
        raise KbError(f"{root}: no such folder; expected a TensorBoard log folder (with events.out.tfevents.* files)")
    refuse_irregular(root, "a TensorBoard log folder or event file")
    found = sorted(root.rglob("*tfevents*")) if root.is_dir() else [root]
    files = [path for path in found if is_regular(path) or path == root]  # a link could point anywhere
    if not files:
        raise KbError(f"{root}: no TensorBoard event files (events.out.tfevents.*) in it or below")
    runs: dict[Path, Scalars] = {}
    read = set(files)
    problems = [f"{path}: {kind_of(os.lstat(path).st_mode)}, not read" for path in found if path not in read]
    for path in files:
        problem = _read_file(path, runs.setdefault(path.parent, Scalars()))
        if problem:
            problems.append(problem)
    problems += [f"{run.bad_time}; its run is imported without times" for run in runs.values() if run.bad_time]
    imported = []
    for folder, scalars in sorted(runs.items()):
        if scalars.series:
            name = str(folder.relative_to(root)) if root.is_dir() and folder != root else folder.name
            imported.append(_imported(name, scalars, workdir / f"run-{len(imported)}"))
    return imported, problems


def import_tensorboard(kb: Any, root: Path, info: Any, workdir: Path) -> Any:
    """Each run folder under root as an entry; files that could not be read whole are the outcome's problems."""
    from ingest.importers.batch_import import create_each

    runs, problems = read_tensorboard(root, workdir)
    outcome = create_each(kb, ((item.title, item, None) for item in runs), info, "kb ingest tensorboard")
    outcome.problems[:0] = problems
    return outcome


def _read_file(path: Path, into: Scalars) -> str | None:
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New
    from tensorboard.data_compat import migrate_event
    from tensorboard.util import tensor_util

    read = 0
    try:
        reader = PyRecordReader_New(str(path))  # tensorboard's own record reader: it checks every record's crc
        while True:
            try:
                reader.GetNext()
            except errors.OutOfRangeError:
                break
            event = migrate_event(event_pb2.Event.FromString(reader.record()))
            read += 1
            _note_time(path, read, event.wall_time, into)
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars" and value.HasField("tensor"):
                    number = float(tensor_util.make_ndarray(value.tensor).item())
                    into.series.setdefault(value.tag, []).append((event.step, number))
    except Exception as problem:  # the stub's DataLossError, a protobuf DecodeError, an OSError
        what = "not a TensorBoard event file" if read == 0 else f"damaged after {read} events (those are imported)"
        return f"{path}: {what}: {type(problem).__name__}: {str(problem).strip()[:200]}"
    into.events += read
    return None


def _note_time(path: Path, number: int, wall_time: float, into: Scalars) -> None:
    """Widen the run's first and last times by one event's; a wall_time that is no time is noted, not used."""
    if into.bad_time:
        return
    try:
        from_epoch(wall_time, "wall_time")
    except ValueError as problem:
        into.bad_time, into.first, into.last = f"{path}: event {number}: {problem}", None, None
        return
    into.first = wall_time if into.first is None else min(into.first, wall_time)
    into.last = wall_time if into.last is None else max(into.last, wall_time)


def _imported(name: str, scalars: Scalars, folder: Path) -> Imported:
    folder.mkdir(parents=True)
    files: list[tuple[Path, str]] = []
    metrics: dict[str, dict[str, Any]] = {}
    tags = sorted(scalars.series)
    names = metric_names(tags[:METRICS_KEPT])  # distinct: `val.loss` and `val_loss` keep a curve each
    for tag in tags[:METRICS_KEPT]:
        points = sorted(scalars.series[tag], key=lambda point: point[0])
        kb_name = names[tag]
        metrics[kb_name] = {"value": points[-1][1], "step": points[-1][0]}
        if len(points) > 1:
            curve = folder / curve_file(kb_name)
            curve.write_text("".join(f"{value!r}\n" for _, value in points))
            files.append((curve, curve.name))
    timings = {}
    if scalars.first is not None and scalars.last is not None:
        timings = {
            "started": iso(from_epoch(scalars.first, "wall_time")),
            "ended": iso(from_epoch(scalars.last, "wall_time")),
            "wall_s": round(scalars.last - scalars.first, 3),
        }
    lines = [f"TensorBoard run {name}: {scalars.events} events, {len(tags)} scalars.", ""]
    if len(tags) > METRICS_KEPT:
        lines += [f"The run logged {len(tags)} scalars; the first {METRICS_KEPT} by name are imported.", ""]
    lines += ["| scalar | last | step | points |", "|---|---:|---:|---:|"]
    lines += [f"| {tag} | {scalars.series[tag][-1][1]:g} | {scalars.series[tag][-1][0]} | {len(scalars.series[tag])} |"
              for tag in tags[:20]]  # fmt: skip
    fields: dict[str, Any] = {"status": "completed", "metrics": metrics, "tensorboard": {"run": name}}
    if timings:
        fields["timings"] = timings
    return Imported(title=f"TensorBoard run {name}", kind="run", fields=fields, body="\n".join(lines) + "\n",
                    files=files)  # fmt: skip
