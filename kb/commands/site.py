"""`kb site build` and `kb site serve`: the knowledge base as a static, searchable website."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

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
        from kb.commands.common import knowledge_base, report_problems, settle_orphan
        from kb.website.build import build_site

        kb = knowledge_base(ctx)
        with _progress() as progress:
            report = build_site(
                kb, out, base_url=base_url, progress=progress, settle=settle_orphan, allow_secrets=allow_secrets
            )
        report_problems(report.problems)
        typer.echo(f"Site: {report.summary()}")
        typer.echo(f"Open {report.out / 'index.html'}; for search, run `kb site serve`.")

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
        from kb.commands.common import knowledge_base, settle_orphan
        from kb.website.serve import serve

        serve(knowledge_base(ctx), out, host=host, port=port, watch=watch, echo=typer.echo, settle=settle_orphan)


def _progress():  # a bar on a terminal, nothing in a pipe
    import contextlib
    import sys

    if not sys.stderr.isatty():
        return contextlib.nullcontext(None)
    return _Bar()


class _Bar:
    def __enter__(self):
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.start()
        self.task = self.bar.add_task("Rendering pages", total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        if done % 50 == 0 or done == total:
            self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
