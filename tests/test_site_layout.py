"""The site's layout in Chromium on a phone (390 px) and a desktop (1280 px), in light and dark mode.

Built once from this repository's own knowledge base (reported results, decisions, the compiled and eager
tiny-lm runs with their compile evidence and loss curves) and a failed run whose message is one long word, as
logs have. Each page must fit its window: the page as wide as the viewport, no element sticking out past it
(wide tables scroll inside their own box), and an entry page of sane height. Screenshots are kept under
tests/output/site/ for a person to look at.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from browser import Tab, browser_fixture, open_tab, serve, tab_fixture  # noqa: F401 (fixtures)
from conftest import REPO, write_entry
from playwright.sync_api import Browser, expect

from kb.store.knowledge_base import KnowledgeBase
from kb.website.build import build_site

COMPILED = "2026-11-30-tiny-lm-cpu-compiled-b5c3dc"
FAILED = "2026-12-01-tiny-lm-neuron-compiled-f10001"
LONG_WORD = "neuronx_cc_partitioner_" * 12  # 276 characters without a space, as paths and symbols in logs are
WIDTHS = (390, 1280)
PAGES = (
    "index.html", "list/index.html", "list/backend/cpu.html", f"entries/{COMPILED}.html", f"entries/{FAILED}.html",
    "compare/tiny-lm.html", "trends/tiny-lm.html", "decisions.html", "search.html", "workloads/index.html",
    "workloads/tiny-lm.html",
)  # fmt: skip
# What sticks out past the window, ignoring what is inside a box that scrolls or clips it (a wide table in its
# .scroll container, a <pre>) and what is not shown (closed <details>, hidden elements: no box).
OVERFLOW = """(width) => {
    const clipped = (el) => {
        for (let p = el.parentElement; p; p = p.parentElement) {
            const style = getComputedStyle(p);
            if (['auto', 'scroll', 'hidden', 'clip'].includes(style.overflowX) && p !== document.body
                && p !== document.documentElement) return true;
        }
        return false;
    };
    return [...document.body.querySelectorAll('*')].filter((el) => {
        const box = el.getBoundingClientRect();
        return box.width > 0 && (box.right > width + 0.5 || box.left < -0.5) && !clipped(el);
    }).map((el) => `${el.tagName.toLowerCase()}.${el.className} ${Math.round(el.getBoundingClientRect().right)}`);
}"""


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("layout") / "kb")
    shutil.rmtree(kb.entries_path)
    shutil.copytree(REPO / "entries", kb.entries_path)
    write_entry(
        kb, FAILED, f"tiny-lm on neuron: {LONG_WORD}", recorded="2026-12-01T09:00:00Z", status="failed",
        backend="neuron", mode="compiled", workload={"name": "tiny-lm"}, versions={"torch": "2.13.0"},
        timings={"load_s": 4.0, "wall_s": 3600.2},
        failure={"class": "compile_timeout", "message": f"RuntimeError: {LONG_WORD}", "explanation": LONG_WORD},
    )  # fmt: skip
    out = kb.root.parent / "site"
    build_site(kb, out)
    with serve(out) as served:
        yield served


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_the_window(url: str, browser: Browser, width: int) -> None:
    with open_tab(browser, f"layout-{width}", viewport={"width": width, "height": 900}) as tab:
        page = tab.page
        sizes = {}
        for path in PAGES:
            assert page.goto(url + path).status == 200, path
            page.wait_for_load_state("networkidle")
            scroll_width = page.evaluate("() => document.documentElement.scrollWidth")
            assert scroll_width == width, f"{path}: the page is {scroll_width} px wide in a {width} px window"
            assert page.evaluate(OVERFLOW, width) == [], path
            sizes[path] = page.evaluate("() => document.documentElement.scrollHeight")
            tab.screenshot(path.removesuffix(".html").replace("/", "-"))
        assert tab.problems() == []
    # An entry page reads as a page, not a column of letters (28,436 px at 390 px before).
    assert sizes[f"entries/{COMPILED}.html"] < (7000 if width == 390 else 4000), sizes
    assert sizes[f"entries/{FAILED}.html"] < 3000, sizes


def test_on_a_phone_fields_stack_and_wide_tables_scroll_in_their_box(url: str, browser: Browser) -> None:
    with open_tab(browser, "layout-phone", viewport={"width": 390, "height": 844}) as tab:
        page = tab.page
        page.goto(f"{url}entries/{COMPILED}.html")
        headline = page.locator("section.headline dl.fields")
        label, value = headline.locator("dt").first.bounding_box(), headline.locator("dd").first.bounding_box()
        assert value["y"] >= label["y"] + label["height"] - 1, (label, value)  # the value below its label
        assert value["width"] > 300, value  # and as wide as the screen allows
        frames = page.locator("section.readable .scroll").filter(has=page.locator("table.records")).first
        box = frames.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        widths = frames.evaluate("el => [el.scrollWidth, el.clientWidth]")
        assert widths[0] > widths[1], widths  # the frames table is wider than the phone: it scrolls in its box
        frames.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
        assert frames.evaluate("el => el.scrollLeft") > 0
        for chart in page.locator("section.charts svg.chart").all():
            chart_box = chart.bounding_box()
            assert 300 < chart_box["width"] <= 390 - 24, chart_box
        tab.screenshot("entry")
        page.goto(url + "list/index.html")
        entries = page.locator(".results .scroll").first
        assert entries.evaluate("el => el.getBoundingClientRect().right") <= 390
        assert page.evaluate("() => document.documentElement.scrollWidth") == 390
        assert tab.problems() == []


def test_the_charts_render_on_a_run_with_a_loss_series(url: str, tab: Tab) -> None:
    page = tab.page
    page.goto(f"{url}entries/{COMPILED}.html")
    charts = page.locator("section.charts figure.run-chart")
    expect(charts.locator("figcaption")).to_have_text(
        ["loss over 80 steps", "Step times: the first step (where a compiled run compiles), warm-up and steady steps "
         "(log scale); the first step took 217× a steady one"]
    )  # fmt: skip
    line = charts.first.locator("polyline.line")
    box = line.bounding_box()
    assert box and box["width"] > 400 and box["height"] > 100, box
    style = line.evaluate("l => { const s = getComputedStyle(l); return [s.fill, s.strokeWidth]; }")
    assert style == ["none", "2px"], style
    dots = charts.nth(1).locator("circle")
    expect(dots).to_have_count(4)
    xs = [dot.bounding_box()["x"] for dot in dots.all()]
    assert xs[0] > xs[2] + 200, xs  # the first step (7.5 s) far right of a steady step (35 ms) on the log axis
    tab.screenshot("charts")
    assert tab.problems() == []


@pytest.mark.parametrize(("scheme", "background", "text"), [
    ("light", "rgb(255, 255, 255)", "rgb(29, 35, 42)"), ("dark", "rgb(21, 25, 29)", "rgb(227, 231, 235)")])  # fmt: skip
def test_dark_mode_follows_the_system_setting(
    url: str, browser: Browser, scheme: str, background: str, text: str
) -> None:
    with open_tab(browser, f"layout-{scheme}", color_scheme=scheme) as tab:
        page = tab.page
        page.goto(f"{url}entries/{FAILED}.html")
        colours = page.evaluate(
            "() => { const s = getComputedStyle(document.body); return [s.backgroundColor, s.color]; }"
        )
        assert colours == [background, text]
        failure = page.locator("section.failure").evaluate("el => getComputedStyle(el).backgroundColor")
        assert failure != background  # the failure still stands out
        tab.screenshot("failed-entry")
        page.goto(f"{url}entries/{COMPILED}.html")
        tab.screenshot("entry")
        assert tab.problems() == []
