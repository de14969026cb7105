"""`kb expect`: what must hold per workload and backend (expectations.toml, kept in git), checked against
the newest evidence; `--update` rewrites the file from it."""

from __future__ import annotations

import typer

HELP = """Check the expectations in expectations.toml (at the knowledge base's root, kept in git) against
the newest evidence: pass, fail, improved (better than the bound: lock it in with --update) or missing (no
evidence). FAIL also when the pair's newest run failed (with its class) or failed numerics (a NaN loss
included); an interrupted run is passed over. Counters (graph_breaks, recompiles, graphs, fallback_ops) come
from the newest completed run, timings and rates from the median of its repeats, pooled as the board pools
them (same release, shapes, devices and hardware; launch times apart; busy runs kept out), with n and their
spread; an improvement counts beyond that spread. An unknown figure, workload or backend is an error with a
did-you-mean. Exits 1 on any fail or missing, for CI.

--update rewrites the bounds from the newest evidence (counts exactly, timings and rates with 10% room or
their runs' spread), but only tighter: --relax WORKLOAD:BACKEND[:MODE]:FIGURE names each bound it may
loosen. A timing bound needs 3 repeated runs; a failing pair keeps its bound.

\b
  [[expect]]
  workload = "tiny-lm"
  backend = "cpu"
  mode = "compiled"
  figure = "graph_breaks"   # a counter, passing_cases, a timing or metric, or
  max = 0                   # "numerics" (no bound); or min = ...
"""


def register(app: typer.Typer) -> None:
    @app.command("expect", help=HELP)
    def expect_command(
        ctx: typer.Context,
        update: bool = typer.Option(False, "--update", help="Tighten the bounds to the newest evidence."),
        relax: list[str] = typer.Option(
            [], "--relax", metavar="NAME", help="With --update: a bound it may loosen (WORKLOAD:BACKEND[:MODE]:FIGURE)."
        ),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        from kb.answers import expectations
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.db import reading

        kb, db = synced(ctx)
        path = kb.root / expectations.FILE_NAME
        stated = expectations.read(path)
        with reading(db):
            if relax and not update:
                from kb.errors import KbError

                raise KbError("--relax loosens a bound as --update rewrites it: give --update too")
            outcomes = (
                expectations.rewrite(db, path, stated, tuple(relax)) if update else expectations.check(db, stated, path)
            )
        if json_:
            print_json([outcome.as_dict() for outcome in outcomes])
        else:
            from kb.text.answer_lines import expectation_lines

            for line in expectation_lines(outcomes):
                typer.echo(line)
        if update:
            typer.echo(f"kb: rewrote {path} from the newest evidence", err=True)
        elif any(outcome.verdict in ("fail", "missing") for outcome in outcomes):
            raise typer.Exit(1)
