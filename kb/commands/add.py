"""`kb add`: a result someone else reported (a vendor, a paper, a blog), typed in with its source."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kb.commands import describing, written

HELP = """Add a reported result (kind report): who published it and where, what was measured, the figures
with their units, and the caveats. Reported entries are marked as such everywhere, and never mixed
silently with measured ones. In a terminal, kb asks for what the options leave out.
"""


def register(app: typer.Typer) -> None:
    @app.command("add", help=HELP)
    def add_command(
        ctx: typer.Context,
        title: Optional[str] = typer.Option(None, "--title", help="A title, e.g. 'Qwen3-32B training on 16 Trn2'."),
        publisher: Optional[str] = typer.Option(None, "--publisher", help="Who published it, e.g. SemiAnalysis."),
        url: Optional[str] = typer.Option(None, "--url", help="Where it was published."),
        date_: Optional[str] = typer.Option(
            None, "--date", help="When it was published (or 'unknown').", metavar="YYYY-MM-DD"
        ),
        measured: Optional[str] = typer.Option(None, "--measured", help="What was measured, in a sentence."),
        metric: list[str] = typer.Option([], "--metric", help="name=value[unit], e.g. tokens_per_s=11099tokens/s."),
        caveat: list[str] = typer.Option([], "--caveat", help="A caveat; repeatable."),
        workload: Optional[str] = describing.WORKLOAD,
        model: Optional[str] = typer.Option(None, "--model", help="The model, e.g. Qwen3-32B."),
        backend: Optional[str] = describing.BACKEND,
        mode: Optional[str] = describing.MODE,
        hardware: Optional[str] = typer.Option(None, "--hardware", help="The accelerators, e.g. '16x Trainium2'."),
        setting: list[str] = describing.SETTING,
        version: list[str] = describing.VERSION,
        tag: list[str] = describing.TAG,
        reported_by: Optional[str] = typer.Option(None, "--reported-by", help="Who typed it in."),
        note: Optional[str] = describing.NOTE,
        json_: bool = written.JSON,
    ) -> None:
        from datetime import date

        from ingest.describe import parse_all, parse_versions
        from kb.answers.reports import Report, new_report
        from kb.commands.common import ask_missing, knowledge_base
        from kb.errors import KbError

        # Asked for what is missing, a person is asked for the source's address too (it is optional).
        ask_url = url is None and sys.stdin.isatty() and not all((title, publisher, date_, measured))
        values = ask_missing(
            {
                "--title": (title, "Title"),
                "--publisher": (publisher, "Publisher (who reported it)"),
                "--date": (date_, "Date it was reported (YYYY-MM-DD, or unknown)"),
                "--measured": (measured, "What was measured"),
            },
            "a reported result",
        )
        if ask_url:
            url = typer.prompt("Address of the source (Enter for none)", default="", show_default=False) or None
        try:
            when = None if values["--date"] == "unknown" else date.fromisoformat(values["--date"])
        except ValueError:
            raise KbError(f"--date {values['--date']!r}: expected a date like 2025-10-23, or unknown") from None
        settings, metrics = parse_all(setting, metric)
        report = Report(
            title=values["--title"], publisher=values["--publisher"], date=when, measured=values["--measured"], url=url,
            reported_by=reported_by, workload=workload, model=model, backend=backend, mode=mode, hardware=hardware,
            metrics=metrics, settings=settings, versions=parse_versions(version), caveats=caveat, tags=tag, note=note,
        )  # fmt: skip
        entry = new_report(knowledge_base(ctx), report)
        written.report_written(entry, f"kb: recorded report {entry.id}", json_)
