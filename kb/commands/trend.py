"""`kb trend METRIC --workload W`: a metric or timing across versions, with regressions flagged."""

from __future__ import annotations

from typing import Optional

import typer

HELP = """Follow a metric (tokens_per_s) or a timing (compile_s, step_s) of a workload across versions of a
package (torch by default), in PEP 440 order, with a sparkline. One series per program, split as kb board
--regressions splits them: backend and mode, device count, shape settings (batch, sequence length, dtype
...; not steps or seed), hardware and launch times, and cold or warm cache for compile times; builds of one
release (2.10.0+cu126, +cu128) make one point. Launch times are shown, never judged.
Where a series changed is located as kb board --regressions locates it (E-Divisive means, then kb's one
verdict rule on the runs either side, 3 a side): slower is a REGRESSION on the first release after the
change (the release before is the last good one), faster an improvement. Runs that did not complete or
ran on a busy machine are left out; kb board --regressions lists what stopped working.
"""


def register(app: typer.Typer) -> None:
    @app.command("trend", help=HELP)
    def trend_command(
        ctx: typer.Context,
        metric: str = typer.Argument(..., help="A metric or timing name, e.g. tokens_per_s or compile_s."),
        workload: str = typer.Option(..., "--workload", help="The workload to follow."),
        package: str = typer.Option("torch", "--package", help="Whose versions order the points."),
        floor: Optional[float] = typer.Option(
            None, "--floor", min=0.0, help="The practical floor, as a fraction (default: kb.toml's, 0.02)."
        ),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from dataclasses import asdict

        from kb.answers.trend import trend
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.db import reading
        from kb.text.answer_lines import trend_lines

        kb, db = synced(ctx)
        chosen = kb.config.answers.floor if floor is None else floor
        with reading(db):
            result = trend(db, metric, workload, package=package, floor=chosen)
        if json_:
            print_json(asdict(result))
            return
        typer.echo("\n".join(trend_lines(result, workload)))
