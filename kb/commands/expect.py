"""`kb expect`: what must hold per workload and backend (expectations.toml, kept in git), checked against
the newest evidence; `--update` rewrites the file from it."""

from __future__ import annotations

import typer

HELP = """Check the expectations in expectations.toml (at the knowledge base's root, kept in git) against
the newest completed evidence: pass, fail, improved (better than the bound: lock it in with --update) or
missing (no evidence). Exits 1 on any fail or missing, for CI. --update rewrites every bound from the
newest evidence (counts exactly, timings and rates with 10% room), as PyTorch's update_expected.py does.

\b
  [[expect]]
  workload = "tiny-lm"
  backend = "cpu"
  mode = "compiled"
  figure = "graph_breaks"   # graph_breaks, recompiles, passing_cases, or a timing or metric
  max = 0                   # or min = ...
"""


def register(app: typer.Typer) -> None:
    @app.command("expect", help=HELP)
    def expect_command(
        ctx: typer.Context,
        update: bool = typer.Option(False, "--update", help="Rewrite the bounds from the newest evidence."),
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
            outcomes = expectations.rewrite(db, path, stated) if update else expectations.check(db, stated)
        if json_:
            print_json([outcome.as_dict() for outcome in outcomes])
        else:
            from kb.answers_text import expectation_lines

            for line in expectation_lines(outcomes):
                typer.echo(line)
        if update:
            typer.echo(f"kb: rewrote {path} from the newest evidence", err=True)
        elif any(outcome.verdict in ("fail", "missing") for outcome in outcomes):
            raise typer.Exit(1)
