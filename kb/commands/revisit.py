"""`kb revisit [--check]`: the decisions that newer evidence or releases say to look at again;
`kb revisit --ack ID --note ...`: record that one was looked at again and kept."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import typer

if TYPE_CHECKING:
    from kb.answers.decisions import Due, TriggerState
    from kb.model.entry import Entry


DUE = 1  # kb revisit --check: a decision is due
UNREADABLE = 2  # kb revisit --check: a decision file cannot be read, so whether it is due is unknown


def register(app: typer.Typer) -> None:
    @app.command("revisit")
    def revisit_command(
        ctx: typer.Context,
        check: bool = typer.Option(
            False, "--check", help="Exit 1 when any decision is due, 2 when one cannot be read (for a scheduled job)."
        ),
        ack: Optional[str] = typer.Option(
            None,
            "--ack",
            help="Record a review of this decision: its triggers then count only what is newer.",
            metavar="ID",
        ),
        note: Optional[str] = typer.Option(None, "--note", help="With --ack: what was re-checked, and the outcome."),
        by: Optional[str] = typer.Option(
            None, "--by", help="With --ack: who reviewed it (default: git's user.name and email, else your login)."
        ),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """List the decisions that are due, each with its reasons and the entries to look at."""
        from datetime import date

        from kb.answers.decisions import OPEN_STATUSES, due
        from kb.commands.common import knowledge_base, synced
        from kb.commands.envelope import print_json
        from kb.errors import KbError
        from kb.index import answers
        from kb.index.db import reading
        from kb.model.entry import Entry

        if ack is not None:
            from kb.answers.decisions import review
            from kb.model.entry import utc_now
            from kb.store.authors import current_author
            from kb.terminal.plain import with_path

            if not note:
                raise KbError("--ack needs --note: say what was re-checked, e.g. --note 're-checked on 2.27.1'")
            kb = knowledge_base(ctx)
            entry = review(kb, ack, note=note, by=by or current_author(kb.root), when=utc_now())
            typer.echo(with_path(f"kb: recorded a review of {entry.id}", entry.path), err=True)
            return
        if note or by:
            raise KbError("--note and --by go with --ack ID")
        from kb.answers.decisions import unreadable_decisions
        from kb.index.sync import stored_problems

        kb, db = synced(ctx)
        with reading(db):
            decisions = [Entry.read(kb.entries_path / path) for path in answers.decision_paths(db)]
            found = due(decisions, db, date.today())
            unreadable = unreadable_decisions(stored_problems(kb, db))
        for where, what in unreadable:
            typer.echo(
                f"kb: error: {where}: a decision kb cannot read ({what}); fix the file, then run again", err=True
            )
        if json_:
            print_json([{"id": d.decision.id, "title": d.decision.title, "reasons": d.reasons, "entries": d.entries,
                         "why": [_why(state) for state in d.fired]} for d in found])  # fmt: skip
        elif not found:
            checked = sum(1 for d in decisions if (d.data.get("decision") or {}).get("status") in OPEN_STATUSES)
            typer.echo(f"No decision is due ({checked} decision{'s' if checked != 1 else ''} checked).")
        for item in [] if json_ else found:
            typer.echo("\n".join(_due_lines(item)))
        if check and unreadable:
            raise typer.Exit(UNREADABLE)
        if check and found:
            raise typer.Exit(DUE)


def _due_lines(item: Due) -> list[str]:
    """A due decision, its reasons and the entries to look at, wrapped at 80 columns (ids never cut)."""
    import textwrap

    def wrapped(text: str, first: str) -> list[str]:
        return textwrap.wrap(text, 80, initial_indent=first, subsequent_indent="    ", break_long_words=False,
                             break_on_hyphens=False)  # fmt: skip

    lines = [f"{item.decision.id}  {item.decision.title}"]
    for reason in item.reasons:
        lines += wrapped(reason, "  - ")
    if item.entries:
        lines += wrapped(", ".join(item.entries[:10]) + (" ..." if len(item.entries) > 10 else ""), "  look at: ")
    return lines


def _why(state: TriggerState) -> dict[str, Any]:
    """One fired trigger for --json: its reason and the runs and releases behind it (the site links them)."""
    return {"trigger": state.text, "reason": state.reason, "runs": state.runs, "releases": state.releases,
            "comparison": state.comparison}  # fmt: skip


def revisit_lines(ctx: typer.Context, decision: Entry) -> list[str]:
    """What kb show adds under a decision: whether it is due, why, and each trigger's current value."""
    from datetime import date

    from kb.answers.decisions import decision_state
    from kb.commands.common import synced
    from kb.index.db import reading
    from kb.text.answer_lines import decision_lines

    _, db = synced(ctx)
    with reading(db):
        return decision_lines(decision_state(decision, db, date.today()))
