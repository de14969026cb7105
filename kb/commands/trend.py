"""`kb trend METRIC --workload W`: a metric or timing across versions, with regressions flagged."""

from __future__ import annotations

import typer

HELP = """Follow a metric (tokens_per_s) or a timing (compile_s, step_s) of a workload across versions of a
package (torch by default), in PEP 440 order, with a sparkline. One series per program: backend and mode,
device count, any shape setting that differs (batch, sequence length, dtype ...; not steps or seed), and
cold or warm cache for compile times; builds of one release
(2.10.0+cu126, +cu128) make one point. Each version's median is held against the best of all earlier
versions: worse by more than the threshold is flagged as a regression, better by more than it as an
improvement. Throughput shares the step times' verdict; a phase timed once per run needs repeated runs
on both versions for a flag. Runs that did not complete are left out; kb board --regressions lists them.
"""


def register(app: typer.Typer) -> None:
    @app.command("trend", help=HELP)
    def trend_command(
        ctx: typer.Context,
        metric: str = typer.Argument(..., help="A metric or timing name, e.g. tokens_per_s or compile_s."),
        workload: str = typer.Option(..., "--workload", help="The workload to follow."),
        package: str = typer.Option("torch", "--package", help="Whose versions order the points."),
        threshold: float = typer.Option(0.05, "--threshold", min=0.0, help="The noise band, as a fraction."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from dataclasses import asdict

        from kb.answers.trend import trend
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.humanize import field
        from kb.index.db import reading

        _, db = synced(ctx)
        with reading(db):
            result = trend(db, metric, workload, package=package, threshold=threshold)
        if json_:
            print_json(asdict(result))
            return
        typer.echo(f"{metric} of {workload} across {package} versions ({result.better} is better)")
        typer.echo(f"flagged: beyond {threshold:.0%} of the best earlier version")
        for series in result.series:
            typer.echo(f"\n{series.group or 'all'}  {series.sparkline()}")
            for point in series.points:
                change = "" if point.change is None else f"{point.change:+.1%} vs best"
                flag = f"  {point.flag.upper()}" if point.flag else f"  ({point.note})" if point.note else ""
                typer.echo(
                    f"  {point.version:<12} {field(metric, point.value):>12}  n={point.count:<3} "
                    f"{point.last}  {change}{flag}"
                )
                builds = [label for label in point.labels if label != point.version]
                if builds:
                    typer.echo(f"    builds: {', '.join(builds)}")
        if result.skipped:
            typer.echo(
                f"\n({result.skipped} entr{'ies' if result.skipped > 1 else 'y'} without a {package} version left out)"
            )
        if result.unfinished:
            typer.echo(
                f"({result.unfinished} run{'s' if result.unfinished > 1 else ''} that did not complete left out)"
            )
