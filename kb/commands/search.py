"""`kb search QUERY`: ranked full-text search with snippets, narrowed by the same filters as `kb ls`."""

from __future__ import annotations

from typing import Optional

import typer

from kb.commands import filters as opt

HELP = """Search every entry's text: titles, failure messages and explanations, notes, adaptations, tags,
versions (torch=2.9.0), settings, the command line, compile evidence and output tails.

The query language is Whoosh's: words (stemmed: compile finds compiled), "phrases", OR, NOT, AND,
wildcards (flex*), and fields: backend:neuron status:failed failure:compile_timeout tag:trn3
workload:qwen3-32b versions:torch=2.9.0 setting:batch=8 command:main.py title:... notes:... output:...
When no entry has every word, kb shows the entries with the most of them and says which; when nothing
matches, kb suggests the nearest words the index holds.
"""


def register(app: typer.Typer) -> None:
    @app.command("search", help=HELP)
    def search_command(
        ctx: typer.Context,
        query: str = typer.Argument(..., help="What to look for, e.g. 'backend:neuron \"flex attention\" timeout'."),
        backend: Optional[str] = opt.BACKEND,
        workload: Optional[str] = opt.WORKLOAD,
        status: Optional[str] = opt.STATUS,
        kind: Optional[str] = opt.KIND,
        mode: Optional[str] = opt.MODE,
        failure: Optional[str] = opt.FAILURE,
        tag: list[str] = opt.TAG,
        since: Optional[str] = opt.SINCE,
        until: Optional[str] = opt.UNTIL,
        package: list[str] = opt.PACKAGE,
        setting: list[str] = opt.SETTING,
        limit: int = typer.Option(20, "--limit", min=1, help="At most this many results."),
        json_: bool = typer.Option(False, "--json", help="Print JSON: one object per result, best first."),
    ) -> None:
        from kb.commands.common import synced
        from kb.commands.envelope import print_json
        from kb.index.query import search

        chosen = opt.build(backend, workload, status, kind, mode, failure, tag, since, until, package, setting)
        _, db = synced(ctx)
        opt.check_known(chosen, db)
        results = search(db, query, chosen, limit=limit)
        if json_:
            print_json(
                [
                    {**row, "score": round(hit.score, 4), "snippet": hit.snippet, "matched": list(hit.matched),
                     "words": hit.words}
                    for hit, row in results
                ]
            )  # fmt: skip
            return
        if not results:
            from kb.errors import quoted
            from kb.index.query import suggest

            better = suggest(db, query)  # from the index's own words: "complie" finds compile
            typer.echo("No entries match." + (f" Did you mean {quoted(better)}?" if better else ""))
            return
        from kb.terminal.plain import piped, search_lines, write_lines

        first = results[0][0]
        if len(first.matched) < first.words:  # on stderr: a pipe gets the results alone
            typer.echo(
                f"No entry has all {first.words} words; showing entries with {len(first.matched)} "
                f"({', '.join(first.matched)}).",
                err=True,
            )
        if piped():
            write_lines(search_lines(results))
            return
        from kb.terminal.rich_text import emit_table, search_results

        emit_table(db, [row for _, row in results], lambda short: search_results(results, short=short))
