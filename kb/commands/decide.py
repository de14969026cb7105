"""`kb decide`: record a decision with its evidence and its revisit triggers."""

from __future__ import annotations

from typing import Optional

import typer

from kb.commands import written

HELP = """Record a decision: the question, the choice, the alternatives, why, the evidence (entry ids,
checked to exist) and when to look at it again. Triggers (repeatable --trigger):

\b
  release: PACKAGE         a newer release of PACKAGE is recorded (kb release)
  when: NAME OP NUMBER [for key=value ...]
                           the 95% interval of the median of the comparable runs
                           since meets a condition (3 runs at least), e.g.
                           'when: compile_s < 600 for workload=gpt-oss-train backend=neuron'
  when: NAME faster|slower by N% [for key=value ...]
                           the runs since, against those before, get that verdict
                           with N% as the floor, e.g.
                           'when: step_s faster by 10% for workload=gpt-oss-train backend=neuron'
  after: YYYY-MM-DD        the date has passed
  newer-evidence           a newer run of the same workload and backend exists

A trigger naming a workload, backend, figure or package this knowledge base does not know is refused
(it could never fire), with the nearest names. In a terminal, missing title, question and choice are
asked for; in scripts, give them as options.
"""


def register(app: typer.Typer) -> None:
    @app.command("decide", help=HELP)
    def decide_command(
        ctx: typer.Context,
        title: Optional[str] = typer.Option(None, "--title", help="One line: what was decided."),
        question: Optional[str] = typer.Option(None, "--question", help="The question the decision answers."),
        choice: Optional[str] = typer.Option(None, "--choice", help="What was chosen."),
        alternative: list[str] = typer.Option([], "--alternative", help="An option considered; repeatable."),
        rationale: Optional[str] = typer.Option(None, "--rationale", help="Why."),
        evidence: list[str] = typer.Option([], "--evidence", help="An entry id the decision rests on; repeatable."),
        status: str = typer.Option("accepted", "--status", help="proposed, accepted, rejected or superseded."),
        owner: Optional[str] = typer.Option(None, "--owner", help="Who owns the decision."),
        trigger: list[str] = typer.Option([], "--trigger", help="When to revisit (see above); repeatable."),
        supersedes: Optional[str] = typer.Option(
            None, "--supersedes", help="The decision this one replaces.", metavar="ID"
        ),
        date_: Optional[str] = typer.Option(
            None, "--date", help="When it was decided (default: today).", metavar="YYYY-MM-DD"
        ),
        json_: bool = written.JSON,
    ) -> None:
        from datetime import date

        from kb.answers.decisions import new_decision
        from kb.commands.common import ask_missing
        from kb.errors import KbError
        from kb.store.authors import current_author

        asked = ask_missing(
            {"--title": (title, "Title"), "--question": (question, "Question"), "--choice": (choice, "Choice")},
            "a decision",
        )
        try:
            when = date.fromisoformat(date_) if date_ else date.today()
        except ValueError:
            raise KbError(f"--date {date_!r}: expected a date like 2026-11-30") from None
        from kb.answers.decisions import known_names
        from kb.commands.common import synced
        from kb.index.db import reading

        kb, db = synced(ctx)
        with reading(db):
            known = known_names(db)
        entry = new_decision(
            kb,
            title=asked["--title"],
            question=asked["--question"],
            choice=asked["--choice"],
            alternatives=alternative,
            rationale=rationale,
            evidence=evidence,
            status=status,
            owner=owner,
            triggers=trigger,
            supersedes=supersedes,
            when=when,
            author=current_author(kb.root),
            known=known,
        )
        written.report_written(entry, f"kb: recorded decision {entry.id}", json_)
