"""`kb ingest junit|profile|compile-trace FILE`: evidence from other tools' files, as entries."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, Optional

import typer

from kb.commands import describing, written
from kb.errors import KbError

JUNIT_HELP = """Import test results written as JUnit XML (pytest --junitxml=..., and other producers) as a
coverage entry: totals, failures and skips grouped by reason, and every case's outcome attached, so that
`kb compare` of two coverage entries lists the cases newly passing, failing and skipped."""
PROFILE_HELP = """Import a torch.profiler Chrome trace (JSON, gzipped or not): total profiled time, the split
between device compute, memory copies, communication, host work and idle gaps, and the top operators by
self time. Added to the run it profiled with --to, else recorded as an entry of its own."""
COMPILE_HELP = """Import a TORCH_TRACE folder (TORCH_TRACE=DIR python train.py): graphs, graph breaks and
recompiles with their reasons, compile time by frame; with tlparse installed, its HTML report is attached."""


def register(app: typer.Typer) -> None:
    ingest = typer.Typer(help="Import evidence from other tools' files.", no_args_is_help=True)
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
        from ingest.junit import read_junit

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
        from ingest.profile import read_trace

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
        from ingest.compile_trace import read_compile_trace

        given = Given(title, workload, backend, mode, tag, setting, version, author, note)
        _import(
            ctx, "kb ingest compile-trace", lambda work: read_compile_trace(folder, work), given, to, "compile", json_
        )


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
    from ingest.describe import RunInfo, parse_all, parse_versions
    from ingest.imported import add_to, create_imported
    from kb.commands.common import knowledge_base

    kb = knowledge_base(ctx)
    if to:
        kb.locate(to)  # a target that does not exist fails before the file is read
        if any(given):
            raise KbError("--to adds to an entry as it is; describe the run in the entry itself, not with options")
    settings, _ = parse_all(given.settings, [])
    info = RunInfo(
        title=given.title, workload=given.workload, backend=given.backend, mode=given.mode, tags=given.tags,
        settings=settings, note=given.note, author=given.author,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kb-ingest-") as work:
        imported = read(Path(work))
        if to:
            entry = add_to(kb, to, imported, section)
        else:
            entry = create_imported(kb, imported, info, tool=tool, versions=parse_versions(given.versions))
    summary = imported.body.strip().splitlines()[0] if imported.body.strip() else ""
    sentence = f"kb: {'added to' if to else 'recorded'} {entry.id} ({entry.kind}) in {entry.path}"
    written.report_written(entry, sentence + (f"\n{summary}" if summary else ""), json_)
