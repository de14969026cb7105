"""`kb site build` and `kb site serve`: the knowledge base as a static, searchable website."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import typer

from kb.terminal.progress import Progress

BUILD_HELP = """Render every entry, listing, comparison, trend and decision into a static site (default: site/
in the knowledge base). Only pages whose inputs changed are rewritten; the same entries give the same
bytes. Open index.html from the folder to read it; search needs it served (`kb site serve`, or any
static host: give --base-url when it lives under a sub-path, as on GitHub Pages).
"""
SERVE_HELP = """Build the site, serve it on this machine only (loopback), and rebuild when entries change."""


def register(app: typer.Typer) -> None:
    site = typer.Typer(help="Build and preview the static site.", no_args_is_help=True)
    app.add_typer(site, name="site")

    @site.command("build", help=BUILD_HELP)
    def site_build(
        ctx: typer.Context,
        out: Optional[Path] = typer.Option(
            None, "--out", help="The site folder (default: site/ in the knowledge base)."
        ),
        base_url: str = typer.Option("/", "--base-url", help="The path the site is served under, e.g. /kb/."),
        allow_secrets: bool = typer.Option(
            False,
            "--allow-secrets",
            help="Publish even entries that `kb check --secrets` finds a credential in (for a private site).",
        ),
    ) -> None:
        from kb.commands.common import knowledge_base, report_problems, settle_orphan, waiting_note
        from kb.terminal.progress import counted
        from kb.website.build import build_site

        kb = knowledge_base(ctx)
        with _Pages() as progress:
            report = build_site(
                kb, out, base_url=base_url, progress=progress, settle=settle_orphan, allow_secrets=allow_secrets,
                waiting=waiting_note, indexing=counted,
            )  # fmt: skip
        report_problems(report.problems)
        typer.echo(
            textwrap.fill(
                f"Site: {report.summary()}",
                width=80,
                subsequent_indent="  ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
        typer.echo(f"Open {report.out / 'index.html'}")
        typer.echo("For search, serve it: kb site serve")

    @site.command("serve", help=SERVE_HELP)
    def site_serve(
        ctx: typer.Context,
        out: Optional[Path] = typer.Option(
            None, "--out", help="The site folder (default: site/ in the knowledge base)."
        ),
        port: int = typer.Option(8000, "--port", min=0, max=65535, help="The port (0 picks a free one)."),
        host: str = typer.Option("127.0.0.1", "--host", help="A loopback address: 127.0.0.1 or ::1."),
        watch: bool = typer.Option(True, "--watch/--no-watch", help="Rebuild when entries change."),
    ) -> None:
        from kb.commands.common import knowledge_base, settle_orphan, waiting_note
        from kb.terminal.progress import counted
        from kb.website.serve import serve

        serve(knowledge_base(ctx), out, host=host, port=port, watch=watch, echo=typer.echo, settle=settle_orphan,
              waiting=waiting_note, indexing=counted)  # fmt: skip


class _Pages:
    """The build's page count, shown by kb's one progress display (a bar on a terminal, a line every few seconds in a
    pipe), started once the build knows how many pages it renders."""

    def __enter__(self) -> Callable[[int, int], None]:
        self.shown: Progress | None = None
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.shown is None:
            self.shown = Progress("Rendering", total, "pages").__enter__()
        self.shown(done - self.shown.done)

    def __exit__(self, *exc: object) -> None:
        if self.shown is not None:
            self.shown.__exit__(*exc)
