"""`kb site build`: the knowledge base as a static site, rebuilt incrementally and byte for byte the same.

Each page has a key (a hash of what it shows, plus a fingerprint of the templates and this code); the
manifest in the site folder remembers the key each page was written with. A page whose key did not
change is not rendered; a rendered page whose bytes did not change is not rewritten; a page (or a copied
attachment) that is no longer produced is removed. Only files the manifest lists are ever deleted, so
the site folder can hold files of its own (a README, a CNAME).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import __version__
from kb.errors import KbError, Problem
from kb.store.knowledge_base import KnowledgeBase
from kb.store.orphans import Settle
from kb.website import search_index
from kb.website.pages import Build, Page, Site, publish, search_page
from kb.website.render import Rendered, write_if_changed
from kb.website.workers import render_pages

if TYPE_CHECKING:
    from kb.index.sync import Counting, Waiting

MANIFEST = ".kb-site.json"
LOCK = ".kb-site.lock"
HERE = Path(__file__).parent
# What a page's look depends on besides its data: a change to any of these renders every page again.
RENDERER_FILES = (HERE, HERE.parent / "text", HERE.parent / "answers")

Progress = Callable[[int, int], None]


@dataclass
class BuildReport:
    out: Path
    pages: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    copied: int = 0
    bundles: int = 0
    bundles_rebuilt: int = 0
    problems: list[Problem] = field(default_factory=list)
    plain: dict[str, list[str]] = field(default_factory=dict)  # page -> why its texts were shown as written
    seconds: float = 0.0

    def summary(self) -> str:
        files = len({problem.path for problem in self.problems})  # one file can have several problems
        broken = f"; {files} broken entry file{'s' * (files != 1)} left out (kb check lists them)" if files else ""
        if self.plain:
            shown = ", ".join(sorted(self.plain)[:5]) + (" ..." if len(self.plain) > 5 else "")
            broken += f"; {len(self.plain)} pages show a text as written, too nested or bracketed for Markdown: {shown}"
        return (
            f"{self.pages} pages ({self.written} written, {self.unchanged} unchanged, {self.removed} removed), "
            f"{self.copied} attachments copied, search index {self.bundles_rebuilt} of {self.bundles} bundles "
            f"rebuilt in {self.seconds:.2f} s{broken}"
        )


def default_out(kb: KnowledgeBase) -> Path:
    return kb.root / "site"


def build_site(
    kb: KnowledgeBase,
    out: Path | None = None,
    *,
    base_url: str = "/",
    today: date | None = None,
    progress: Progress | None = None,
    settle: Settle | None = None,
    allow_secrets: bool = False,
    waiting: Waiting | None = None,
    indexing: Counting | None = None,
) -> BuildReport:
    from kb.answers.decisions import due as due_decisions
    from kb.index import site as index_site
    from kb.index.db import connect, index_path, reading
    from kb.index.prepare import prepare
    from kb.index.sync import stored_problems
    from kb.model.entry import Entry

    started = time.perf_counter()
    out = (out or default_out(kb)).resolve()
    _check_out(kb, out)
    base_url = normal_base_url(base_url)
    report = BuildReport(out)
    # dead recorders' entries are published as killed, as kb ls shows them
    prepare(kb, settle=settle, waiting=waiting, progress=indexing)
    if not allow_secrets:
        refuse_secrets(kb)
    report.problems = stored_problems(kb)
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out / LOCK):
        db = connect(index_path(kb.cache_path))
        try:
            with reading(db):  # damage no sync reads: removed, for the next build to rebuild
                today = today or date.today()
                decisions = [Entry.read(kb.entries_path / path) for path in index_site.decision_paths(db)]
                due, unreadable = {}, {}
                for decision in decisions:  # one decision whose review file is unreadable never stops the build
                    try:
                        due |= {item.decision.id: item for item in due_decisions([decision], db, today)}
                    except KbError as exc:
                        unreadable[decision.id] = str(exc)
                site = Site(kb, db)
                pages = publish(site, Build(due, report.problems, base_url, today, unreadable))
                _write(kb, out, pages, partial(search_page, site), base_url, report, progress)
        finally:
            db.close()
    report.seconds = time.perf_counter() - started
    return report


def refuse_secrets(kb: KnowledgeBase) -> None:
    """A site is published: an entry or attachment holding what looks like a credential stops the build, named."""
    from kb.secrets.scan import entry_of, scan_base

    found = scan_base(kb)
    if found:
        named = sorted({entry_of(kb, finding.path) for finding in found})
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        raise KbError(
            f"not published: {len(named)} entr{'ies' if len(named) != 1 else 'y'} hold what looks like a credential "
            f"({shown}); `kb check --secrets` shows where. Mask or remove it, or build with --allow-secrets"
        )


def normal_base_url(base_url: str) -> str:
    if not base_url.startswith("/") or "//" in base_url or any(c in base_url for c in "?#\"'<> "):
        raise KbError(f"--base-url {base_url!r}: give the path the site is served under, e.g. / or /kb/")
    return base_url.rstrip("/") + "/"


def _check_out(kb: KnowledgeBase, out: Path) -> None:
    root, entries = kb.root.resolve(), kb.entries_path.resolve()
    if out in (root, entries) or out.is_relative_to(entries) or out.is_relative_to(kb.cache_path.resolve()):
        raise KbError(f"--out {out}: the site needs a folder of its own (default: {default_out(kb)})")


def _write(
    kb: KnowledgeBase,
    out: Path,
    pages: list[Page],
    search_page: Callable[[search_index.SearchState], Page],
    base_url: str,
    report: BuildReport,
    progress: Progress | None,
) -> None:
    manifest_path = out / MANIFEST
    old = _read_manifest(manifest_path)
    fingerprint = renderer_fingerprint()
    current = old.get("renderer") == fingerprint  # else every page looks different: build it all again
    old_pages = old.get("pages", {}) if current else {}
    new_pages: dict[str, dict[str, Any]] = {}
    total = len(pages) + 1

    def changed(batch: list[Page]) -> list[Page]:
        """The pages whose key or file differs from the manifest's; the others are noted as unchanged."""
        fresh = []
        for page in batch:
            known = old_pages.get(page.path)
            if known and known["key"] == page.key and (out / page.path).is_file():
                new_pages[page.path] = known
                report.unchanged += 1
            else:
                fresh.append(page)
        return fresh

    def note(done: Rendered) -> None:
        new_pages[done.path] = {"key": done.key, "files": done.files}
        report.written += done.written
        report.unchanged += not done.written
        report.copied += done.copied
        if done.plain:
            report.plain[done.path] = done.plain
        if progress:
            progress(len(new_pages), total)

    for done in render_pages(kb, out, base_url, changed(pages)):
        note(done)
    # The search page names the bundles and their stale results, so it comes after the search index.
    search = search_index.update(out, pages, search_index.SearchState.from_json(old.get("search") if current else {}))
    for done in render_pages(kb, out, base_url, changed([search_page(search)])):
        note(done)
    report.pages = total
    report.bundles, report.bundles_rebuilt = len(search.bundles), search.rebuilt
    assets = _copy_assets(out)
    produced = set(new_pages) | {f for page in new_pages.values() for f in page["files"]} | set(assets)
    previous = set(old.get("pages", {})) | {f for p in old.get("pages", {}).values() for f in p["files"]}
    previous |= set(old.get("assets", []))
    for stale in sorted(previous - produced):
        report.removed += _remove(out, stale)
    manifest = {"kb": __version__, "renderer": fingerprint, "assets": sorted(assets), "pages": new_pages,
                "search": search.to_json()}  # fmt: skip
    write_if_changed(manifest_path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())


@cache
def renderer_fingerprint() -> str:
    hasher = hashlib.sha256(__version__.encode())
    for root in RENDERER_FILES:
        files = (
            sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            if root.is_dir()
            else [root]
        )
        for path in files:
            hasher.update(path.name.encode())
            hasher.update(path.read_bytes())
    return hasher.hexdigest()[:24]


def _copy_assets(out: Path) -> list[str]:
    written = []
    for source in sorted((HERE / "assets").iterdir()):
        relative = f"assets/{source.name}"
        write_if_changed(out / relative, source.read_bytes())
        written.append(relative)
    return written


def _remove(out: Path, relative: str) -> int:
    path = out / relative
    try:
        path.unlink()
    except FileNotFoundError:
        return 0
    parent = path.parent
    while parent != out:
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent
    return 1


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}  # no manifest, or a damaged one: build everything again
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build at a time per site folder: a second waits for the first."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
