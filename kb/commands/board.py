"""`kb board`: which backend wins for each workload, on what evidence; `--missing`: what to run next."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import typer

if TYPE_CHECKING:
    import sqlite3

HELP = """The scoreboard: one block per workload, one line per backend and mode. Each line holds the
median of the cell's repeated runs on the newest release of its backend's package (older releases are
history), comparable with the workload's baseline: throughput per device (or step time) with n, spread,
release and date; its speed-up over the baseline (counted only where numerics passed: ×N? when unchecked,
×0 when they failed) with one verdict: faster, slower, equivalent within the floor ([answers] floor in
kb.toml, 2% by default) or inconclusive (×N~: too few runs, or the interval straddles the floor). Runs on a
busy machine are kept out and counted. A cell whose runs on the newest release failed says so and never wins.
Reported figures are listed apart, never ranked.

The baseline is the incumbent ([answers] incumbent in kb.toml, kb init --incumbent, or --incumbent), never
a failed or numerics-failed state; without one the board guesses (the backend with the most completed runs)
and says so on its first line. --missing prints the evidence checklist per workload and backend instead;
--regressions what stopped working across releases (runs and test cases), apart from what got slower.
"""


def register(app: typer.Typer) -> None:
    @app.command("board", help=HELP)
    def board_command(
        ctx: typer.Context,
        workload: Optional[str] = typer.Option(None, "--workload", help="Only this workload."),
        incumbent: Optional[str] = typer.Option(
            None,
            "--incumbent",
            help="The baseline backend (and mode), e.g. cuda or 'cuda compiled'.",
            metavar="BACKEND",
        ),
        missing: bool = typer.Option(False, "--missing", help="The evidence checklist: what is missing to decide."),
        regressions: bool = typer.Option(
            False, "--regressions", help="What stopped working across releases, apart from what got slower."
        ),
        summary: bool = typer.Option(
            False,
            "--summary",
            help="One line per backend and mode: pass rate, geomean speed-up, compile, peak memory, per release.",
        ),
        markdown: bool = typer.Option(False, "--markdown", help="Print Markdown (for a pull request or a wiki)."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from kb.answers.board import board
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.db import reading

        kb, db = synced(ctx)
        if workload is not None:
            _require_runs_of(db, workload)
        if regressions:
            from kb.answers.regressions import regressions as across_releases

            with reading(db):
                found = across_releases(db, kb.entries_path, workload, kb.config.answers.floor)
            if json_:
                print_json(found.as_dict())
                return
            from kb.text.answer_lines import regression_lines

            typer.echo("\n".join(regression_lines(found)))
            return
        chosen = kb.config.answers.incumbent if incumbent is None else incumbent
        with reading(db):
            result = board(db, incumbent=chosen, workload=workload, floor=kb.config.answers.floor)
            if summary:  # the summary reads the cells' runs too: under the same read
                from kb.answers.summary import summary as per_backend

                summarised = per_backend(result, db)
        if summary:
            if json_:
                print_json(summarised.as_dict())
                return
            from kb.text.answer_lines import summary_lines

            typer.echo("\n".join(summary_lines(summarised, result)))
            return
        if json_:
            print_json(result.as_dict())
            return
        from kb.text.answer_lines import board_lines, board_markdown, missing_lines

        if markdown:
            typer.echo(board_markdown(result))
            return
        # One write: echo per line costs more than the board itself (thousands of lines at 100,000 entries).
        typer.echo("\n".join(missing_lines(result) if missing else board_lines(result)))


def _require_runs_of(db: sqlite3.Connection, workload: str) -> None:
    """An unknown workload is bad input, as in `kb trend`: an empty board would read as "nothing recorded yet"."""
    from kb.answers.names import did_you_mean
    from kb.errors import KbError
    from kb.index import answers
    from kb.index.db import reading

    with reading(db):
        known = answers.workload_names(db)
    if workload not in known:
        raise KbError(f"no runs of workload {workload!r}{did_you_mean(workload, known)}")
