"""MLflow runs as entries, read through MLflow's own client from a tracking folder, a database or a tracking URI.

Each run becomes one run entry: params as settings, each metric's last value (with its step) as a metric
and its whole history as a curve (`metric-<name>.txt`, one value a line, as the instrumentation
writes them), tags, status, start and end, the git commit and source MLflow recorded, and the artifacts
listed (copied only when asked, and only from inside the store or a folder named with --artifacts-from: a
run's artifact_uri is the store's word and may name any folder on the machine). The entry's `mlflow`
section keeps the run's id, which makes a second import of the same store skip the runs already imported.
A database file is read from a copy, so that MLflow's schema upgrades and table creation never touch the
original.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ingest.frameworks.integration import curve_file, metric_name, metric_names
from ingest.importers.imported import Imported
from ingest.importers.regular import is_regular
from ingest.importers.timestamps import from_epoch
from kb.errors import KbError
from kb.model.entry import iso

METRICS_KEPT = 200  # per run; a run logging more keeps the first by name and says how many were left out
ARTIFACTS_LISTED = 1_000
PAGE = 1_000
IMPORT_TIMEOUT_S = 1800.0  # the whole import: a slow server answering many small requests cannot make it hours
REQUEST_TIMEOUT_S = 30.0  # a tracking server's answer to one request; MLflow's own is 120 s, tried 8 times
REQUEST_TRIES = 2
STATUS = {"FINISHED": "completed", "FAILED": "failed", "KILLED": "killed", "RUNNING": "running"}
SECTION = "mlflow"


@dataclass
class MlflowRun:
    run_id: str
    label: str  # for messages: the run's name and experiment
    imported: Imported | None  # None when it could not be read, or was imported before
    problem: str | None = None
    already: bool = False


class TimeUp(Exception):
    """The import's time bound passed."""


@dataclass
class Deadline:
    """When the whole import must end: looked at before each request to the store, each of which a server has
    at most REQUEST_TIMEOUT_S (and no more than the whole bound) to answer."""

    seconds: float
    ends: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def check(self) -> None:
        if time.monotonic() >= self.ends:
            raise TimeUp()


def open_client(store: str, workdir: Path, timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
    """MLflow's client for a tracking folder (mlruns), a database file (read from a copy) or a tracking URI; a
    server that accepts and never answers is given up on after `timeout_s` a request, tried REQUEST_TRIES times."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise KbError("kb ingest mlflow needs MLflow: pip install 'kb[mlflow]'") from None
    for name in ("mlflow", "alembic"):  # their progress lines are not kb's output
        logging.getLogger(name).setLevel(logging.ERROR)
    path = Path(store)
    if "://" in store:
        uri = store
        os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, round(timeout_s)))
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(REQUEST_TRIES - 1)
    elif path.is_dir():
        # MLflow writes a default experiment into a folder that has none: a folder of no store is left alone.
        if not any(path.glob("*/meta.yaml")):
            raise KbError(f"{store}: not an MLflow tracking folder (no experiment in it, no */meta.yaml)")
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 reads such folders only when asked
        uri = path.resolve().as_uri()
    elif path.is_file():
        if path.open("rb").read(16) != b"SQLite format 3\x00":
            raise KbError(f"{store}: not an MLflow database (not SQLite); expected mlflow.db or a tracking folder")
        copy = workdir / path.name
        shutil.copyfile(path, copy)
        uri = f"sqlite:///{copy}"
    else:
        raise KbError(
            f"{store}: no such folder or file; expected an MLflow tracking folder (mlruns), a database file "
            "(mlflow.db) or a tracking URI"
        )
    return MlflowClient(tracking_uri=uri)


@dataclass
class Artifacts:
    """Where a run's artifacts may be read from on this machine, and whether they are copied."""

    roots: tuple[Path, ...]  # the store's own folder (none for a server) and the folders named by the person
    copy: bool = False

    def allows(self, folder: Path) -> bool:
        return any(folder.resolve().is_relative_to(root) for root in self.roots)


def store_folder(store: str) -> Path | None:
    """The folder a store's own artifacts are in on this machine: a tracking folder, a database's folder."""
    parsed = urlparse(store)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme == "sqlite":
        return Path(unquote(parsed.path).removeprefix("/")).resolve().parent
    if "://" in store:
        return None
    path = Path(store).resolve()
    return path if path.is_dir() else path.parent


def _local_folder(uri: str | None) -> Path | None:
    """The folder of an artifact URI that is on this machine (file:// or a bare path), or None."""
    parsed = urlparse(uri or "")
    if parsed.scheme == "file" or (uri and not parsed.scheme):
        return Path(unquote(parsed.path))
    return None


def iter_runs(
    client: Any,
    store: str,
    experiments: list[str],
    skip: set[str],
    workdir: Path,
    artifacts: Artifacts,
    deadline: Deadline,
) -> Iterator[MlflowRun]:
    """Every run of the store (or of the named experiments): read, or with its problem, or `already` (in skip).
    Raises TimeUp when the deadline passes, after the runs read whole before it."""
    from mlflow.entities import ViewType

    try:
        found = list(client.search_experiments(view_type=ViewType.ALL))
    except Exception as problem:
        if "timed out" in str(problem).lower():
            raise KbError(
                f"{store}: no answer from the tracking server in {os.environ['MLFLOW_HTTP_REQUEST_TIMEOUT']} s "
                f"(tried {REQUEST_TRIES} times); check the server, or give a longer --timeout"
            ) from None
        raise KbError(f"{store}: MLflow cannot read it as a tracking store: {_short(problem)}") from None
    chosen = [e for e in found if not experiments or e.name in experiments or e.experiment_id in experiments]
    missing = set(experiments) - {e.name for e in chosen} - {e.experiment_id for e in chosen}
    if missing:
        raise KbError(f"{store}: no experiment named {', '.join(sorted(missing))}; it has {_names(found)}")
    for experiment in chosen:
        token = None
        while True:
            deadline.check()
            try:
                page = client.search_runs(
                    [experiment.experiment_id], run_view_type=ViewType.ALL, max_results=PAGE, page_token=token
                )
            except Exception as problem:  # a metric line that is not a number makes MLflow refuse the whole page
                label = f"experiment {experiment.name} ({experiment.experiment_id})"
                yield MlflowRun("", label, None, f"MLflow cannot read its runs: {_short(problem)}")
                break
            for run in page:
                label = f"run {run.info.run_name or run.info.run_id} ({run.info.run_id}) of {experiment.name}"
                if run.info.run_id in skip:
                    yield MlflowRun(run.info.run_id, label, None, already=True)
                    continue
                folder = workdir / run.info.run_id
                folder.mkdir()
                try:
                    imported, problem = _read_run(client, run, experiment, store, folder, artifacts, deadline)
                    yield MlflowRun(run.info.run_id, label, imported, problem)
                except TimeUp:
                    raise
                except Exception as problem:
                    yield MlflowRun(run.info.run_id, label, None, _short(problem))
            token = page.token
            if not token:
                break


def import_mlflow(
    kb: Any,
    store: str,
    experiments: list[str],
    info: Any,
    workdir: Path,
    copy_artifacts: bool = False,
    artifacts_from: tuple[Path, ...] = (),
    timeout_s: float = IMPORT_TIMEOUT_S,
) -> Any:
    """Every run of the store not imported yet, as an entry; see create_each for what a bad run does. Past
    `timeout_s` the runs read whole are imported and the rest reported, for the same command to import later."""
    from ingest.importers.batch_import import create_each

    own = store_folder(store)
    roots = (*((own,) if own else ()), *(folder.resolve() for folder in artifacts_from))
    client = open_client(store, workdir, min(REQUEST_TIMEOUT_S, timeout_s))
    deadline = Deadline.after(timeout_s)  # from the first request: loading MLflow takes seconds of its own
    skip = imported_run_ids(kb.iter_entries([]))
    runs: list[MlflowRun] = []
    try:
        for run in iter_runs(client, store, experiments, skip, workdir, Artifacts(roots, copy_artifacts), deadline):
            runs.append(run)
    except TimeUp:
        read = sum(run.imported is not None for run in runs)
        why = (
            f"stopped after {timeout_s:g} s, the bound --timeout sets for the whole import, with {read} new "
            f"run{'s' if read != 1 else ''} read; run the same command again to import the rest (runs imported "
            "are skipped), or give a longer --timeout"
        )
        runs.append(MlflowRun("", store, None, why))
    fresh = ((run.label, run.imported, run.problem) for run in runs if not run.already)
    outcome = create_each(kb, fresh, info, "kb ingest mlflow")
    outcome.already = sum(run.already for run in runs)
    return outcome


def imported_run_ids(entries: Iterator[Any]) -> set[str]:
    """The MLflow run ids already in the knowledge base."""
    return {
        str(entry.data[SECTION]["run_id"])
        for entry in entries
        if isinstance(entry.data.get(SECTION), dict) and entry.data[SECTION].get("run_id")
    }


def _read_run(
    client: Any, run: Any, experiment: Any, store: str, folder: Path, allowed: Artifacts, deadline: Deadline
) -> tuple[Imported, str | None]:
    """The run as an import, and a problem to report beside it (artifacts it may not read), or None."""
    info, data = run.info, run.data
    tags = dict(data.tags)
    name = info.run_name or tags.get("mlflow.runName") or info.run_id
    files: list[tuple[Path, str]] = []
    metrics: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    keys = sorted(data.metrics)
    if len(keys) > METRICS_KEPT:
        notes.append(f"The run logged {len(keys)} metrics; the first {METRICS_KEPT} by name are imported.")
    names = metric_names(keys[:METRICS_KEPT])  # distinct: `val.loss` and `val_loss` keep a curve each
    for key in keys[:METRICS_KEPT]:
        deadline.check()
        history = sorted(client.get_metric_history(info.run_id, key), key=lambda m: (m.step, m.timestamp))
        last = history[-1] if history else None
        kb_name = names[key]
        metrics[kb_name] = {"value": data.metrics[key], "step": last.step if last else None}
        if len(history) > 1:
            curve = folder / curve_file(kb_name)
            curve.write_text("".join(f"{m.value!r}\n" for m in history))
            files.append((curve, curve.name))
    local = _local_folder(info.artifact_uri)
    problem = None
    if local is not None and not allowed.allows(local):
        # Not even listed: the names in a folder elsewhere (a home folder's) are not the run's to tell.
        artifacts = []
        why = (
            f"artifact_uri {info.artifact_uri} is outside the store; give --artifacts-from {local} if that folder "
            "is meant"
        )
        notes.append(f"The run's artifacts are not read: {why}.")
        problem = f"its artifacts are not read: {why}" if allowed.copy else None  # asked for and not done
    else:
        artifacts = _artifacts(client, info.run_id, deadline)
    if allowed.copy and artifacts:
        if local is not None:  # read here, so that a link in it is not followed and only regular files travel
            files += _local_files(local, ARTIFACTS_LISTED)
        else:
            deadline.check()
            fetched = Path(client.download_artifacts(info.run_id, "", str(folder / "artifacts")))
            files += _local_files(fetched, ARTIFACTS_LISTED)
    fields: dict[str, Any] = {
        "status": STATUS.get(info.status, "completed"),
        "settings": {_setting_name(key): _value(value) for key, value in sorted(data.params.items())} or None,
        "metrics": metrics or None,
        "timings": _timings(info.start_time, info.end_time),
        "git": _git(tags),
        "command": {"line": tags["mlflow.source.name"]} if tags.get("mlflow.source.name") else None,
        "author": tags.get("mlflow.user"),
        SECTION: {
            "run_id": info.run_id,
            "run_name": name,
            "experiment": experiment.name,
            "experiment_id": experiment.experiment_id,
            "store": store,
            "status": info.status,
            "tags": {key: value for key, value in sorted(tags.items()) if not key.startswith("mlflow.")} or None,
            "artifact_uri": info.artifact_uri,
            "artifacts": [a["path"] for a in artifacts] or None,
        },
    }
    fields[SECTION] = {key: value for key, value in fields[SECTION].items() if value is not None}
    imported = Imported(
        title=f"MLflow run {name} of {experiment.name}",
        kind="run",
        fields={key: value for key, value in fields.items() if value is not None},
        body=_body(name, experiment.name, info.status, fields, artifacts, notes),
        files=files,
    )
    return imported, problem


def _local_files(folder: Path, most: int) -> list[tuple[Path, str]]:
    """The regular files under folder (links are not followed), at most `most`, with their names inside it."""
    found: list[tuple[Path, str]] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not os.path.islink(os.path.join(root, name)))
        for name in sorted(names):
            path = Path(root, name)
            if is_regular(path) and len(found) < most:
                found.append((path, str(path.relative_to(folder))))
    return found


def _artifacts(client: Any, run_id: str, deadline: Deadline) -> list[dict[str, Any]]:
    """The run's artifact files, walked breadth first, at most ARTIFACTS_LISTED."""
    found: list[dict[str, Any]] = []
    folders = [None]
    while folders and len(found) < ARTIFACTS_LISTED:
        deadline.check()
        for item in client.list_artifacts(run_id, folders.pop(0)):
            if item.is_dir:
                folders.append(item.path)
            else:
                found.append({"path": item.path, "bytes": item.file_size})
    return found[:ARTIFACTS_LISTED]


def _timings(start_ms: int | None, end_ms: int | None) -> dict[str, Any] | None:
    if not start_ms:
        return None
    started = from_epoch(start_ms / 1000, "start_time (in seconds)")
    timings: dict[str, Any] = {"started": iso(started)}
    if end_ms:
        timings["ended"] = iso(from_epoch(end_ms / 1000, "end_time (in seconds)"))
        timings["wall_s"] = round((end_ms - start_ms) / 1000, 3)
    return timings


def _git(tags: dict[str, str]) -> dict[str, Any] | None:
    git = {"commit": tags.get("mlflow.source.git.commit"), "branch": tags.get("mlflow.source.git.branch")}
    return {key: value for key, value in git.items() if value} or None


def _setting_name(key: str) -> str:
    return metric_name(key)  # the same rule: a dot would nest the field


def _value(text: str) -> Any:
    """MLflow keeps every param as text: numbers and booleans become what they say."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "true": True, "false": False}.get(text, text)


def _body(name: str, experiment: str, status: str, fields: dict, artifacts: list, notes: list[str]) -> str:
    metrics = fields.get("metrics") or {}
    lines = [f"MLflow run {name} of experiment {experiment}: {status}, {len(fields.get('settings') or {})} params, "
             f"{len(metrics)} metrics, {len(artifacts)} artifacts.", ""]  # fmt: skip
    lines += [*notes, ""] if notes else []
    if metrics:
        lines += ["| metric | last | step |", "|---|---:|---:|"]
        lines += [f"| {key} | {m['value']:g} | {m['step']} |" for key, m in list(metrics.items())[:20]]
        lines.append("")
    if artifacts:
        lines += ["Artifacts (in MLflow's store; `--copy-artifacts` attaches them):", ""]
        lines += [f"- `{a['path']}` ({a['bytes']} bytes)" for a in artifacts[:20]]
        lines += [f"- and {len(artifacts) - 20} more" if len(artifacts) > 20 else "", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _names(experiments: list[Any]) -> str:
    return ", ".join(sorted(e.name for e in experiments)[:10]) or "no experiments"


def _short(problem: BaseException) -> str:
    text = str(problem).strip().splitlines()
    return f"{type(problem).__name__}: {text[0] if text else ''}"[:300]
