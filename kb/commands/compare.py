"""`kb compare A B [C ...]` or `kb compare --workload W --by backend`: entries side by side."""

from __future__ import annotations

from typing import Optional

import typer

from kb.commands import filters

HELP = """Compare entries side by side: what differs between them (versions, settings, hardware, git
commit and uncommitted changes, tags, step counts, environment), then timings by phase, metrics with the
ratio to the first entry and whether that is better or worse, compile and fallback evidence, numerics
and failures.

Give two or more entry ids (the first is the baseline), or a workload and a grouping: the newest usable
run (completed, with figures) of each group is compared (--by backend, --by mode, --by version:torch),
narrowed by the filters kb ls takes. --by mode holds the backend fixed, --by backend the mode. The
baseline is never a failed, killed, interrupted, running or numerics-failed run (the first entry with
sound figures takes its place): --baseline ID, else the incumbent ([answers] incumbent in kb.toml), else
the backend with the most runs (eager for --by mode). A failed run's figures and launch times (nothing
waited for the device) get no ratio; what failed is said on stderr.
"""


def register(app: typer.Typer) -> None:
    @app.command("compare", help=HELP)
    def compare_command(
        ctx: typer.Context,
        refs: Optional[list[str]] = typer.Argument(None, help="Entry ids (or unique starts of ids).", metavar="ID..."),
        workload: Optional[str] = typer.Option(
            None, "--workload", help="Compare the newest usable runs of a workload."
        ),
        by: Optional[str] = typer.Option(None, "--by", help="Group by backend, mode or version:PACKAGE."),
        baseline: Optional[str] = typer.Option(
            None, "--baseline", help="With --by: the run to compare against.", metavar="ID"
        ),
        backend: Optional[str] = filters.BACKEND,
        mode: Optional[str] = filters.MODE,
        status: Optional[str] = filters.STATUS,
        tag: list[str] = filters.TAG,
        since: Optional[str] = filters.SINCE,
        until: Optional[str] = filters.UNTIL,
        package: list[str] = filters.PACKAGE,
        setting: list[str] = filters.SETTING,
        markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table (for a review)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from kb.answers.compare import compare, grouped
        from kb.commands.common import knowledge_base, synced
        from kb.commands.envelope import print_json
        from kb.errors import KbError

        if refs and (workload or by):
            raise KbError("give entry ids, or --workload with --by, not both")
        if refs:
            kb = knowledge_base(ctx)
            comparison = compare([kb.load(ref) for ref in refs], floor=kb.config.answers.floor)
        elif workload and by:
            from kb.index.db import reading

            kb, db = synced(ctx)
            chosen = filters.build(
                backend=backend,
                workload=None,
                status=status,
                kind=None,
                mode=mode,
                failure=None,
                tag=tag,
                since=since,
                until=until,
                package=package,
                setting=setting,
            )
            with reading(db):
                comparison = grouped(
                    kb, db, workload, by, chosen.where(db), baseline=baseline,
                    incumbent=kb.config.answers.incumbent, backend=backend, mode=mode, floor=kb.config.answers.floor,
                )  # fmt: skip
        else:
            raise KbError("give two or more entry ids, or --workload W --by backend|mode|version:PACKAGE")
        if json_:
            print_json(comparison.as_dict())
            return
        import textwrap

        from kb.terminal.rich_text import COMPARISON_WIDTH, comparison_markdown, comparison_view, emit
        from kb.text.answer_lines import WIDTH

        for note in comparison.notes:  # a failure's message can be long: whole lines of 80 columns
            typer.echo("\n".join(textwrap.wrap(f"kb: {note}", WIDTH, subsequent_indent="  ")), err=True)
        if markdown:
            typer.echo(comparison_markdown(comparison))
            return
        emit(comparison_view(comparison), COMPARISON_WIDTH)
