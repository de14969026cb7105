"""`kb trend METRIC --workload W`: a metric or timing across versions, with regressions flagged."""

from __future__ import annotations

from typing import Optional

import typer

HELP = """Follow a metric (tokens_per_s) or a timing (compile_s, step_s) of a workload across versions of a
package (torch by default), in PEP 440 order, with a sparkline. One series per program: backend and mode,
device count, any shape setting that differs (batch, sequence length, dtype ...; not steps or seed), and
cold or warm cache for compile times; builds of one release (2.10.0+cu126, +cu128) make one point.
Launch times (nothing waited for the device) make a series of their own, never judged.
Each release's runs are judged against the previous release's by kb's one verdict rule (the interval of
the ratio of medians against the floor, 3 runs a side): slower is a REGRESSION (the previous release is
the last good one), faster an improvement, unless the next release undoes it. Runs that did not
complete are left out; kb board --regressions lists them.
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
        from kb.answers_text import trend_lines
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.db import reading

        kb, db = synced(ctx)
        chosen = kb.config.answers.floor if floor is None else floor
        with reading(db):
            result = trend(db, metric, workload, package=package, floor=chosen)
        if json_:
            print_json(asdict(result))
            return
        typer.echo("\n".join(trend_lines(result, workload)))
