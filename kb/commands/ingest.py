"""`kb ingest junit|profile|compile-trace|mlflow|tensorboard`: evidence from other tools' files, as entries."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Optional

import typer

from kb.commands import describing, written
from kb.errors import KbError
from kb.terminal.plain import with_path

JUNIT_HELP = """Import test results written as JUnit XML (pytest --junitxml=..., and other producers) as a
coverage entry: totals, failures and skips grouped by reason, and every case's outcome attached, so that
`kb compare` of two coverage entries lists the cases newly passing, failing and skipped."""
PROFILE_HELP = """Import a torch.profiler Chrome trace (JSON, gzipped or not): total profiled time, the split
between device compute, memory copies, communication, host work and idle gaps, and the top operators by
self time. Added to the run it profiled with --to, else recorded as an entry of its own."""
COMPILE_HELP = """Import a TORCH_TRACE folder (TORCH_TRACE=DIR python train.py): graphs, graph breaks and
recompiles with their reasons, compile time by frame; with tlparse installed, its HTML report is attached."""
MLFLOW_HELP = """Import the runs of an MLflow tracking store (a tracking folder such as mlruns, a database file
such as mlflow.db, or a tracking URI) through MLflow's client: each run becomes an entry with its params as
settings, its metrics with their history, tags, status, start and end, git commit, and its artifacts listed.
Runs imported before are skipped, so importing again adds only the new runs."""
TENSORBOARD_HELP = """Import TensorBoard event files (torchtitan, Lightning, SummaryWriter) with tensorboard's
reader: each folder holding event files becomes a run entry with its scalars as metrics and their curves."""


def register(app: typer.Typer) -> None:
    from kb.commands.envelope import note_command

    ingest = typer.Typer(help="Import evidence from other tools' files.", no_args_is_help=True, callback=note_command)
    app.add_typer(ingest, name="ingest")

    @ingest.command("junit", help=JUNIT_HELP)
    def ingest_junit(
        ctx: typer.Context,
        files: list[Path] = typer.Argument(
            ..., help="JUnit XML files (one suite run, possibly in parts).", metavar="FILE..."
        ),
        title: Optional[str] = typer.Option(None, "--title", help="A title (default: from the suite)."),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        setting: list[str] = describing.SETTING,
        version: list[str] = describing.VERSION,
        author: Optional[str] = describing.AUTHOR,
        note: Optional[str] = describing.NOTE,
        json_: bool = written.JSON,
    ) -> None:
        from ingest.importers.junit import read_junit

        given = Given(title, workload, backend, mode, tag, setting, version, author, note)
        _import(ctx, "kb ingest junit", lambda work: read_junit(files, work), given, json_=json_)

    @ingest.command("profile", help=PROFILE_HELP)
    def ingest_profile(
        ctx: typer.Context,
        trace: Path = typer.Argument(
            ..., help="A Chrome trace from torch.profiler (.json or .json.gz).", metavar="TRACE"
        ),
        to: Optional[str] = typer.Option(None, "--to", help="Add the profile to this run entry.", metavar="ID"),
        title: Optional[str] = typer.Option(None, "--title", help="A title (default: from the trace)."),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        setting: list[str] = describing.SETTING,
        version: list[str] = describing.VERSION,
        author: Optional[str] = describing.AUTHOR,
        note: Optional[str] = describing.NOTE,
        json_: bool = written.JSON,
    ) -> None:
        from ingest.importers.profile import read_trace

        given = Given(title, workload, backend, mode, tag, setting, version, author, note)
        _import(ctx, "kb ingest profile", lambda work: read_trace(trace, work), given, to, "profile", json_)

    @ingest.command("compile-trace", help=COMPILE_HELP)
    def ingest_compile_trace(
        ctx: typer.Context,
        folder: Path = typer.Argument(..., help="The folder TORCH_TRACE pointed at.", metavar="DIR"),
        to: Optional[str] = typer.Option(
            None, "--to", help="Add the compile evidence to this run entry.", metavar="ID"
        ),
        title: Optional[str] = typer.Option(None, "--title", help="A title (default: from the trace)."),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        setting: list[str] = describing.SETTING,
        version: list[str] = describing.VERSION,
        author: Optional[str] = describing.AUTHOR,
        note: Optional[str] = describing.NOTE,
        json_: bool = written.JSON,
    ) -> None:
        from ingest.importers.compile_trace import read_compile_trace

        given = Given(title, workload, backend, mode, tag, setting, version, author, note)
        _import(
            ctx, "kb ingest compile-trace", lambda work: read_compile_trace(folder, work), given, to, "compile", json_
        )

    @ingest.command("mlflow", help=MLFLOW_HELP)
    def ingest_mlflow(
        ctx: typer.Context,
        store: str = typer.Argument(..., help="A tracking folder, a database file or a tracking URI.", metavar="STORE"),
        experiment: list[str] = typer.Option(
            [], "--experiment", help="Only this experiment, by name or id (repeatable).", metavar="NAME"
        ),
        copy_artifacts: bool = typer.Option(False, "--copy-artifacts", help="Attach the runs' artifacts too."),
        artifacts_from: list[Path] = typer.Option(
            [],
            "--artifacts-from",
            help="Read artifacts also from this folder outside the store (repeatable): a run's artifact_uri "
            "may name any folder, so only the store's own are read unless a folder is named here.",
            metavar="DIR",
        ),
        timeout: float = typer.Option(
            1800.0,
            "--timeout",
            min=1,
            help="Seconds the whole import may take; a tracking server has at most 30 of them to answer each "
            "request. The runs read by then are imported, and the same command imports the rest.",
            metavar="S",
        ),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        json_: bool = written.JSON,
    ) -> None:
        from ingest.importers.mlflow_runs import import_mlflow

        given = Given(None, workload, backend, mode, tag, [], [], None, None)
        _import_many(
            ctx,
            lambda kb, info, work: import_mlflow(
                kb, store, experiment, info, work, copy_artifacts, tuple(artifacts_from), timeout
            ),
            given,
            json_,
        )

    @ingest.command("tensorboard", help=TENSORBOARD_HELP)
    def ingest_tensorboard(
        ctx: typer.Context,
        folder: Path = typer.Argument(..., help="A TensorBoard log folder (or one event file).", metavar="DIR"),
        workload: Optional[str] = describing.WORKLOAD,
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        tag: list[str] = describing.TAG,
        json_: bool = written.JSON,
    ) -> None:
        from ingest.importers.tensorboard_events import import_tensorboard

        given = Given(None, workload, backend, mode, tag, [], [], None, None)
        _import_many(ctx, lambda kb, info, work: import_tensorboard(kb, folder, info, work), given, json_)


class Given(NamedTuple):
    """What the options say about the run, beside what the files say."""

    title: Optional[str]
    workload: Optional[str]
    backend: Optional[str]
    mode: Optional[str]
    tags: list[str]
    settings: list[str]
    versions: list[str]
    author: Optional[str]
    note: Optional[str]


def _import(
    ctx: typer.Context,
    tool: str,
    read: Callable,
    given: Given,
    to: str | None = None,
    section: str | None = None,
    json_: bool = False,
) -> None:
    """Read first (bad input writes nothing), then make the entry or add to the one named by --to."""
    from ingest.describe import parse_versions
    from ingest.importers.imported import add_to, create_imported
    from kb.commands.common import knowledge_base

    kb = knowledge_base(ctx)
    if to:
        kb.locate(to)  # a target that does not exist fails before the file is read
        if any(given):
            raise KbError("--to adds to an entry as it is; describe the run in the entry itself, not with options")
    info = _info(given)
    with tempfile.TemporaryDirectory(prefix="kb-ingest-") as work:
        imported = read(Path(work))
        if to:
            entry = add_to(kb, to, imported, section)
        else:
            entry = create_imported(kb, imported, info, tool=tool, versions=parse_versions(given.versions))
    summary = imported.body.strip().splitlines()[0] if imported.body.strip() else ""
    sentence = f"kb: {'added to' if to else 'recorded'} {entry.id} ({entry.kind})"
    written.report_written(entry, sentence, json_)
    if summary:
        typer.echo(summary, err=True)


def _info(given: Given):  # -> RunInfo, imported lazily
    from ingest.describe import RunInfo, parse_all

    settings, _ = parse_all(given.settings, [])
    return RunInfo(
        title=given.title, workload=given.workload, backend=given.backend, mode=given.mode, tags=given.tags,
        settings=settings, note=given.note, author=given.author,
    )  # fmt: skip


def _import_many(ctx: typer.Context, read: Callable, given: Given, json_: bool) -> None:
    """An import that makes an entry per run: each one said as written, then the runs that could not be read
    (exit 1 when there were any: what could be read is imported all the same)."""
    from kb.commands.common import knowledge_base
    from kb.commands.envelope import print_json
    from kb.model.ids import short_id

    kb = knowledge_base(ctx)
    with tempfile.TemporaryDirectory(prefix="kb-ingest-") as work:
        outcome = read(kb, _info(given), Path(work))
    for entry in outcome.entries:
        typer.echo(with_path(f"kb: recorded {entry.id} ({entry.kind})", entry.path), err=True)
        if not json_:
            typer.echo(entry.id)
    if json_:
        print_json([
            {"id": e.id, "short_id": short_id(e.id), "path": str(e.path), "kind": e.kind, "status": e.status}
            for e in outcome.entries
        ])  # fmt: skip
    for problem in outcome.problems:
        typer.echo(f"kb: {problem}", err=True)
    already = f", {outcome.already} imported before" if outcome.already else ""
    unread = f", {len(outcome.problems)} could not be read" if outcome.problems else ""
    typer.echo(f"kb: {len(outcome.entries)} runs imported{already}{unread}", err=True)
    if outcome.problems:
        raise typer.Exit(1)
