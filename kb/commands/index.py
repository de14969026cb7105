"""`kb index [--rebuild]`: bring the SQLite and full-text indexes up to date; `kb watch`: keep that cheap."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("index")
    def index_command(
        ctx: typer.Context,
        rebuild: bool = typer.Option(False, "--rebuild", help="Throw the indexes away and build them from scratch."),
    ) -> None:
        """Update the indexes (every query command does this first, so you rarely need to).

        Other commands list again only the folders whose status-change time (ctime) moved; this one lists every
        folder, for a file system whose folder times do not move (some FUSE mounts of object stores).
        """
        from kb.commands.common import knowledge_base, report_problems, settle_orphan, waiting_note
        from kb.index.prepare import prepare
        from kb.terminal.progress import counted

        report = prepare(
            knowledge_base(ctx),
            settle=settle_orphan,
            rebuild=rebuild,
            every_folder=True,
            waiting=waiting_note,
            progress=counted,
        )
        report_problems(report.problems)
        typer.echo(f"Indexed: {report.summary()}")

    @app.command("watch")
    def watch_command(ctx: typer.Context) -> None:
        """Watch the entries folder, so that each command looks only at the files that changed (Linux).

        Without it every command checks every entry file (about a second at 100,000 entries). Run it in a terminal
        of its own (Ctrl-C stops it) or in the background (`kb watch &`, stopped by `kill %1`); once it stops,
        commands check every file again.
        """
        from kb.commands.common import knowledge_base, settle_orphan, waiting_note
        from kb.index.prepare import prepare
        from kb.index.watch import watch
        from kb.terminal.progress import counted

        kb = knowledge_base(ctx)

        def ready(folders: int) -> None:
            # from the watcher's first journal on, commands look only at what changed
            report = prepare(kb, settle=settle_orphan, waiting=waiting_note, progress=counted)
            typer.echo(
                f"kb: watching {folders} folders under {kb.entries_path} ({report.summary()}); "
                "commands now look only at the files that change.",
                err=True,
            )

        try:
            watch(kb, ready)
        except KeyboardInterrupt:
            typer.echo("kb: stopped watching; commands check every entry file again", err=True)
