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
import filecmp
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from kb import __version__
from kb.errors import KbError, Problem
from kb.store import KnowledgeBase
from kb.website import search_index
from kb.website.pages import Page, Site, digest, facet_path, slug

MANIFEST = ".kb-site.json"
LOCK = ".kb-site.lock"
HERE = Path(__file__).parent
# What a page's look depends on besides its data: a change to any of these renders every page again.
RENDERER_FILES = (HERE, HERE.parent / "sections.py", HERE.parent / "compare.py", HERE.parent / "trend.py")

SEARCH_FILTERS = ("kind", "status", "backend", "workload", "mode", "failure", "tag", "torch")
Progress = Callable[[int, int], None]


@dataclass
class BuildReport:
    out: Path
    pages: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    copied: int = 0
    shards: int = 0
    shards_rebuilt: int = 0
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        broken = f"; {len(self.problems)} broken entries left out (kb check lists them)" if self.problems else ""
        return (
            f"{self.pages} pages ({self.written} written, {self.unchanged} unchanged, {self.removed} removed), "
            f"{self.copied} attachments copied, search index {self.shards_rebuilt} of {self.shards} parts "
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
) -> BuildReport:
    from kb.decisions import due as due_decisions
    from kb.entry import Entry
    from kb.index.db import connect, index_path
    from kb.index.sync import stored_problems, sync

    started = time.perf_counter()
    out = (out or default_out(kb)).resolve()
    _check_out(kb, out)
    base_url = normal_base_url(base_url)
    report = BuildReport(out)
    sync(kb)
    report.problems = stored_problems(kb)
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out / LOCK):
        db = connect(index_path(kb.cache_path))
        try:
            today = today or date.today()
            decisions = [
                Entry.read(kb.entries_path / row[0])
                for row in db.execute("SELECT path FROM entries WHERE kind = 'decision' ORDER BY recorded, id")
            ]
            due = {item.decision.id: item for item in due_decisions(decisions, db, today)}
            site = Site(kb, db)
            pages = _pages(site, due, report.problems, base_url)
            _write(kb, out, pages, base_url, report, progress)
        finally:
            db.close()
    report.seconds = time.perf_counter() - started
    return report


def normal_base_url(base_url: str) -> str:
    if not base_url.startswith("/") or "//" in base_url or any(c in base_url for c in "?#\"'<> "):
        raise KbError(f"--base-url {base_url!r}: give the path the site is served under, e.g. / or /kb/")
    return base_url.rstrip("/") + "/"


def _check_out(kb: KnowledgeBase, out: Path) -> None:
    root, entries = kb.root.resolve(), kb.entries_path.resolve()
    if out in (root, entries) or out.is_relative_to(entries) or out.is_relative_to(kb.cache_path.resolve()):
        raise KbError(f"--out {out}: the site needs a folder of its own (default: {default_out(kb)})")


def _pages(site: Site, due: dict[str, Any], problems: list[Problem], base_url: str) -> list[Page]:
    facets = site.facets()
    pages = list(site.entry_pages(due))
    shards = search_index.shards(pages)
    pages += [site.home_page(facets, due, problems), site.decisions_page(due)]
    pages += site.listing_pages(facets)
    pages += site.comparison_pages()
    pages += site.trend_pages()
    # The search page's filters are the entry pages' Pagefind filters: the facets, with torch's version.
    filters = [(dim.replace("package:", ""), label, values) for dim, label, values in facets]
    search = {"shards": sorted(shards), "facets": [f for f in filters if f[0] in SEARCH_FILTERS]}
    pages.append(Page("search.html", "search.html", digest("search", search), lambda: search))
    pages.append(Page("404.html", "404.html", digest("404", base_url), lambda: {"base_url": base_url}))
    return pages


def _write(
    kb: KnowledgeBase, out: Path, pages: list[Page], base_url: str, report: BuildReport, progress: Progress | None
) -> None:
    manifest_path = out / MANIFEST
    old = _read_manifest(manifest_path)
    fingerprint = renderer_fingerprint()
    old_pages = old.get("pages", {}) if old.get("renderer") == fingerprint else {}
    new_pages: dict[str, dict[str, Any]] = {}
    env = _environment(base_url)
    for number, page in enumerate(pages, 1):
        known = old_pages.get(page.path)
        if known and known["key"] == page.key and (out / page.path).is_file():
            new_pages[page.path] = known
            report.unchanged += 1
        else:
            context = page.context()
            rel = base_url if page.path == "404.html" else "../" * page.depth  # a 404 page is served at any depth
            html = env.get_template(page.template).render(context, rel=rel)
            if _write_if_changed(out / page.path, html.encode()):
                report.written += 1
            else:
                report.unchanged += 1
            copies = [_copy(kb, out, item) for item in context.get("attachments") or [] if item.get("source")]
            report.copied += sum(1 for copied in copies if copied and copied[1])
            new_pages[page.path] = {"key": page.key, "files": sorted(c[0] for c in copies if c)}
        if progress:
            progress(number, len(pages))
    report.pages = len(pages)
    assets = _copy_assets(out)
    produced = set(new_pages) | {f for page in new_pages.values() for f in page["files"]} | set(assets)
    previous = set(old.get("pages", {})) | {f for p in old.get("pages", {}).values() for f in p["files"]}
    previous |= set(old.get("assets", []))
    for stale in sorted(previous - produced):
        report.removed += _remove(out, stale)
    old_shards = old.get("shards", {}) if old.get("renderer") == fingerprint else {}
    shards = search_index.update(out, pages, old_shards, set(old.get("shards", {})))
    report.shards = len(shards)
    report.shards_rebuilt = sum(1 for name, key in shards.items() if old_shards.get(name) != key)
    manifest = {"kb": __version__, "renderer": fingerprint, "assets": sorted(assets), "pages": new_pages,
                "shards": shards}  # fmt: skip
    _write_if_changed(manifest_path, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())


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


@cache
def _environment(base_url: str) -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(version=__version__, base_url=base_url, facet_path=facet_path, slug=slug)
    env.filters["number"] = lambda value: "" if value is None else f"{value:.4g}"
    return env


def _write_if_changed(path: Path, content: bytes) -> bool:
    try:
        if path.stat().st_size == len(content) and path.read_bytes() == content:
            return False
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)  # readers of a served site see the old page or the new one, never half of one
    return True


def _copy(kb: KnowledgeBase, out: Path, item: dict[str, Any]) -> tuple[str, bool] | None:
    """Copy one attachment beside its page; a file that is missing or lies outside the entries folder is skipped."""
    entries = kb.entries_path.resolve()
    source = (kb.entries_path / item["source"]).resolve()
    if not source.is_relative_to(entries) or not source.is_file():
        return None
    relative = f"entries/{item['source']}"
    target = out / relative
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return relative, False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    return relative, True


def _copy_assets(out: Path) -> list[str]:
    written = []
    for source in sorted((HERE / "assets").iterdir()):
        relative = f"assets/{source.name}"
        _write_if_changed(out / relative, source.read_bytes())
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
