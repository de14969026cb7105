"""The home page answers in one screen: per backend the summary of `kb board --summary` beside the workloads that
need attention, each one click from its own page. Bounded however large the knowledge base: thousands of
workloads, decisions due and tags leave it as tall as a few do. Checked in Chromium on the project's generated
3,000-entry knowledge base at 1280 and 390 px, with screenshots kept under tests/output/site/."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from browser import SCREENSHOTS, browser_fixture, open_tab, serve  # noqa: F401 (fixtures)
from conftest import REPO, write_entry
from playwright.sync_api import Browser

from kb.store.knowledge_base import KnowledgeBase
from kb.website.build import build_site
from kb.website.pages import Build, Site
from kb.website.pages.home import ATTENTION, DUE_SHOWN, PER_PAGE, HomePage
from kb.website.render import render_page

WORKLOADS = 1200
DECISIONS = 400
SCREEN = {1280: 800, 390: 844}  # the first screen's height at each width


def home_pages(kb: KnowledgeBase, out: Path) -> list[str]:
    """The home publisher's pages of `kb` (the home page rendered into `out`), as the site build makes them."""
    from kb.answers.decisions import due
    from kb.index import site as index_site
    from kb.index.db import connect, index_path
    from kb.index.prepare import prepare
    from kb.model.entry import Entry

    prepare(kb)
    db = connect(index_path(kb.cache_path))
    try:
        decisions = [Entry.read(kb.entries_path / path) for path in index_site.decision_paths(db)]
        found = {item.decision.id: item for item in due(decisions, db, date(2026, 12, 6))}
        pages = list(HomePage(Site(kb, db)).pages(Build(found, [], "/")))
        render_page(kb, out, "/", next(page for page in pages if page.path == "index.html"))
    finally:
        db.close()
    return [page.path for page in pages]


def test_thousands_of_workloads_decisions_and_tags_leave_the_home_page_bounded(kb: KnowledgeBase, tmp_path) -> None:
    for n in range(WORKLOADS):
        failed = n % 3 == 0
        write_entry(kb, f"2026-11-01-w{n:04d}-cuda-{n:06d}", recorded="2026-11-01T00:00:00Z", backend="cuda",
                    mode="eager", workload={"name": f"w{n:04d}"}, tags=[f"tag-{n}"], versions={"torch": "2.10.0"},
                    status="failed" if failed else "completed",
                    **({"failure": {"class": "oom", "message": "CUDA out of memory"}} if failed else
                       {"metrics": {"tokens_per_s": {"value": 1000.0 + n, "unit": "tokens/s"}}}))  # fmt: skip
    for n in range(DECISIONS):
        write_entry(kb, f"2026-11-02-decision-{n:06d}", title=f"decision {n}", kind="decision",
                    recorded="2026-11-02T00:00:00Z",
                    decision={"question": "Where?", "choice": "CUDA", "status": "accepted", "date": "2026-11-02",
                              "triggers": ["after: 2026-12-01"]})  # fmt: skip
    out = tmp_path / "site"
    paths = home_pages(kb, out)
    home = (out / "index.html").read_text()
    assert len(re.findall(r'<li class="workload-line">', home)) == ATTENTION
    assert f"{WORKLOADS // 3} of {WORKLOADS} workloads need attention" in home
    assert f"{DECISIONS} decisions due for a revisit" in home and f"All {DECISIONS} on the decisions page" in home
    due = home[home.index('<div class="due">') :]
    assert len(re.findall(r'href="entries/2026-11-02-decision-', due[: due.index("</div>")])) == DUE_SHOWN
    assert home.count("tag-") == 0 and home.count('href="list/workload/') <= 12  # the facets: the top few
    assert len(home) < 80_000, len(home)  # as large as a base of a few workloads makes it
    # Each workload one click away, on its own page; their index in pages.
    assert sum(1 for path in paths if re.fullmatch(r"workloads/w\d{4}\.html", path)) == WORKLOADS
    pages = -(-WORKLOADS // PER_PAGE)
    assert {"workloads/index.html", f"workloads/page-{pages}.html"} <= set(paths)
    assert 'href="workloads/w0000.html"' in home


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project's generated 3,000-entry knowledge base, built into a site."""
    root = tmp_path_factory.mktemp("generated") / "kb"
    subprocess.run([sys.executable, "-m", "bench.generate", str(root), "--count", "3000", "--seed", "1",
                    "--workers", "1"], cwd=REPO, check=True, capture_output=True)  # fmt: skip
    out = root / "site"
    build_site(KnowledgeBase(root), out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_the_home_page_of_3000_entries_answers_in_one_screen(generated: Path, browser: Browser, width: int) -> None:
    screen = SCREEN[width]
    with (
        serve(generated) as url,
        open_tab(browser, f"home-{width}", viewport={"width": width, "height": screen}) as tab,
    ):
        page = tab.page
        assert page.goto(url).status == 200
        assert page.evaluate("document.documentElement.scrollWidth") == width  # no sideways scrolling
        height = page.evaluate("document.documentElement.scrollHeight")
        # 44,306 px at 1280 px and 85,449 px at 390 px with every workload's table: now three screens at most at 1280
        # px, and the phone's single column (the facets one under another) within six.
        assert height <= (3 * 800 if width == 1280 else 6 * screen), height
        top = page.locator(".attention li.workload-line").first
        for part in ("a.workload-name", ".answer", ".done", ".current-failure"):  # answer, completion, failures
            box = top.locator(part).bounding_box()
            assert box and box["y"] + box["height"] <= screen and box["x"] + box["width"] <= width, (part, box)
        assert re.search(r"\d+/\d+ runs completed · \w+ ×\d+ on ", top.locator(".done").inner_text())
        if width == 1280:  # the summary beside them, whole, on the first screen
            rows = page.locator("table.summary-table tbody tr")
            assert rows.count() >= 10
            box = rows.last.bounding_box()
            assert box and box["y"] + box["height"] <= screen, box
            assert page.locator("table.summary-table").evaluate("t => t.scrollWidth <= t.parentElement.clientWidth")
            # Each compile whole, `34.7 s (mixed)` as the terminal gives it: broken, if at all, between its pieces.
            pieces = page.locator("table.summary-table td.compile span")
            assert "(unknown)" in pieces.all_inner_texts() and "(mixed)" in pieces.all_inner_texts()
            assert pieces.evaluate_all("spans => spans.every(span => span.getClientRects().length === 1)")
        tab.screenshot("whole")
        page.screenshot(path=str(SCREENSHOTS / f"{tab.name}-first-screen.png"))
        top.locator("a.workload-name").click()
        page.wait_for_url(re.compile(r"workloads/[^/]+\.html$"))
        assert page.locator("table.board-table tbody tr").count() > 0
        assert tab.problems() == [] and tab.failed_responses() == []


def test_the_readme_shows_the_home_page_made_by_the_screenshot_script() -> None:
    readme = (REPO / "README.md").read_text()
    assert "](docs/images/site-home.png)" in readme and "](docs/team.md)" in readme
    image = REPO / "docs" / "images" / "site-home.png"
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.stat().st_size < 300_000
    script = (REPO / "docs" / "screenshots.py").read_text()
    assert '("site-home.png", "index.html", 1280, 800)' in script
