"""One page to disk: rendered from its template, written only when its bytes changed, its attachments copied."""

from __future__ import annotations

import filecmp
import os
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from kb import __version__
from kb.errors import DISK_FULL, KbError
from kb.store.knowledge_base import KnowledgeBase
from kb.website.markup import collecting
from kb.website.pages.base import Page, facet_path, slug

TEMPLATES = Path(__file__).parent / "templates"
# Attachments a browser would run as a page of the site's own origin (an HTML report, an SVG with a script):
# published as text (`report.html.txt`), so that no static host serves them as a page. `kb site serve` also
# sandboxes every attachment (kb.website.serve).
ACTIVE = frozenset({".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".xml", ".xsl", ".xslt", ".mht", ".mhtml"})


@dataclass
class Rendered:
    path: str
    key: str
    files: list[str]  # attachments copied beside the page, relative to the site folder
    written: bool  # the page's bytes changed
    copied: int  # attachments whose bytes changed
    plain: list[str] = field(default_factory=list)  # why texts on the page were shown as written, not as Markdown


def render_page(kb: KnowledgeBase, out: Path, base_url: str, page: Page) -> Rendered:
    with collecting() as plain:
        context = page.context()
    rel = base_url if page.path == "404.html" else "../" * page.depth  # a 404 page is served at any depth
    html = environment(base_url).get_template(page.template).render(context, rel=rel)
    try:
        written = write_if_changed(out / page.path, html.encode())
        copies = [_copy(kb, out, item) for item in context.get("attachments") or [] if item.get("source")]
    except OSError as exc:
        raise _write_error(context, out / page.path, exc) from None
    files = sorted(copy[0] for copy in copies if copy)
    return Rendered(page.path, page.key, files, written, sum(1 for copy in copies if copy and copy[1]), plain)


def _write_error(context: dict[str, Any], target: Path, exc: OSError) -> KbError:
    """The entry a page could not be written for comes first: it is what the person knows and can act on."""
    entry = context.get("entry")
    source = f"the page of {entry.path}" if getattr(entry, "path", None) else "a page"
    advice = "free some disk space and build again" if exc.errno in DISK_FULL else "check the site folder is writable"
    return KbError(f"site build stopped at {source}: cannot write {target}: {exc.strerror}; {advice}")


@cache
def environment(base_url: str) -> Any:
    import jinja2

    from kb.text import humanize

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(version=__version__, base_url=base_url, facet_path=facet_path, slug=slug)
    env.filters["number"] = lambda value: "" if value is None else f"{value:.4g}"
    env.filters["published"] = published
    env.filters.update(duration=humanize.duration, size=humanize.size)  # figures with their units, as people read them
    return env


def write_if_changed(path: Path, content: bytes) -> bool:
    try:
        if path.stat().st_size == len(content) and path.read_bytes() == content:
            return False
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(content)
        os.replace(tmp, path)  # readers of a served site see the old page or the new one, never half of one
    finally:
        tmp.unlink(missing_ok=True)
    return True


def published(relative: str) -> str:
    """Where an attachment is published, relative to where it lies: an active one as text (ACTIVE)."""
    return f"{relative}.txt" if Path(relative).suffix.lower() in ACTIVE else relative


def _copy(kb: KnowledgeBase, out: Path, item: dict[str, Any]) -> tuple[str, bool] | None:
    """Copy one attachment beside its page; a file that is missing or lies outside the entries folder is skipped."""
    entries = kb.entries_path.resolve()
    try:
        source = (kb.entries_path / item["source"]).resolve()
        if not source.is_relative_to(entries) or not source.is_file():
            return None
    except OSError:  # a name the file system cannot hold (too long): there is no such file to publish
        return None
    relative = f"entries/{published(item['source'])}"
    target = out / relative
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return relative, False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)
    return relative, True
