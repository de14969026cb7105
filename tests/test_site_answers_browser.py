"""The answer pages in Chromium at 1280 and 390 px, on the base of test_site_answers_pages: each page reads as the
CLI's --json answer on the same base, fits the window (a table scrolls in its own box, text never sideways),
links the runs and releases behind it, and keeps a screenshot for a person (tests/output/site/)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from answers_base import WORKLOAD, make_base
from browser import Tab, browser_fixture, open_tab, serve  # noqa: F401 (fixtures)
from conftest import json_data, run_kb
from playwright.sync_api import Browser, expect

from kb.store.knowledge_base import KnowledgeBase

WIDTHS = [1280, 390]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KnowledgeBase, str, dict[str, str]]]:
    base, ids = make_base(tmp_path_factory.mktemp("site-answers-browser"))
    built = run_kb("--kb", str(base.root), "site", "build")
    assert built.returncode == 0, built.stderr
    with serve(base.root / "site") as url:
        yield base, url, ids


def cli(base: KnowledgeBase, *args: str) -> object:
    return json_data(run_kb("--kb", str(base.root), *args, "--json").stdout)


@contextlib.contextmanager
def visit(browser: Browser, url: str, name: str, width: int) -> Iterator[Tab]:
    """The page at `width` px; after the test's reading, it must fit the window, and it is kept as a screenshot."""
    with open_tab(browser, f"answers-{name}-{width}", viewport={"width": width, "height": 900}) as tab:
        assert tab.page.goto(url).status == 200
        yield tab
        # Text never scrolls sideways: only a table's own box may.
        assert tab.page.evaluate("document.documentElement.scrollWidth") <= width
        tab.screenshot(name)
        assert tab.problems() == [] and tab.failed_responses() == []


def said(tab: Tab, selector: str) -> list[str]:
    return [" ".join(text.split()) for text in tab.page.locator(selector).all_inner_texts()]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_checklist_in_chromium(served: tuple, browser: Browser, width: int) -> None:
    base, url, _ = served
    (workload,) = [w for w in cli(base, "board")["workloads"] if w["workload"] == WORKLOAD]
    with visit(browser, f"{url}checklist/index.html", "checklist-index", width) as tab:
        tab.page.locator("ul.checklist-index a", has_text=WORKLOAD).click()
        expect(tab.page).to_have_url(re.compile(rf"checklist/{WORKLOAD}\.html$"))
    with visit(browser, f"{url}checklist/{WORKLOAD}.html", "checklist", width) as tab:
        expected = []
        for cell in workload["cells"]:
            answered = sum(1 for check in cell["checklist"] if check["ok"] is True)
            asked = sum(1 for check in cell["checklist"] if check["ok"] is not None)
            expected.append(f"{WORKLOAD} on {cell['label']}: {answered} of {asked} answered")
        assert said(tab, "section.checklist-cell h2") == expected
        words = {True: "yes", False: "no", None: "n/a"}
        marks = [words[check["ok"]] for cell in workload["cells"] for check in cell["checklist"]]
        assert said(tab, "li.check .mark") == marks


@pytest.mark.parametrize("width", WIDTHS)
def test_the_regressions_in_chromium(served: tuple, browser: Browser, width: int) -> None:
    base, url, _ = served
    with visit(browser, f"{url}regressions.html", "regressions", width) as tab:
        found = cli(base, "board", "--regressions")
        shown = said(tab, "section.breakages h3")
        assert shown == [f"{b['workload']} on {b['backend']} · {b['mode']}: {b['package']} {b['before']} → "
                         f"{b['after']}: {b['failure']}" for b in found["breakages"]]  # fmt: skip
        slow = said(tab, "section.slowdowns h3")
        assert slow == [f"{s['workload']} {s['figure']} on {s['series']}: {s['package']} {s['last_good']} → "
                        f"{s['first_bad']} {s['change']:+.1%}" for s in found["slowdowns"]]  # fmt: skip
        first_bad = found["breakages"][0]["failed_entry"]
        tab.page.locator("section.breakages a", has_text=first_bad).click()
        expect(tab.page).to_have_url(re.compile(rf"entries/{first_bad}\.html$"))
        tab.page.go_back()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_expectations_in_chromium(served: tuple, browser: Browser, width: int) -> None:
    base, url, _ = served
    with visit(browser, f"{url}expectations.html", "expectations", width) as tab:
        verdicts = said(tab, "li.expectation .verdict")
        assert verdicts == [outcome["verdict"].upper() for outcome in cli(base, "expect")]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_decisions_in_chromium(served: tuple, browser: Browser, width: int) -> None:
    base, url, ids = served
    with visit(browser, f"{url}decisions.html", "decisions", width) as tab:
        due = cli(base, "revisit")
        cards = tab.page.locator("details.decisions-due article.decision-card")
        expect(cards).to_have_count(len(due))
        titles = said(tab, "details.decisions-due article h2")
        assert sorted(titles) == sorted(item["title"] for item in due)
        reasons = said(tab, "details.decisions-due .due li")
        assert sorted(r.split(". Made due by")[0] for r in reasons) == sorted(r for d in due for r in d["reasons"])
        # Folded without JavaScript: a click on its group hides the reviewed decision; its review says why not due.
        quiet = tab.page.locator("details.decisions-quiet")
        expect(quiet.locator(".review")).to_contain_text("by Ana: re-checked <2.27.1>: still failing")
        quiet.locator("summary").click()
        expect(quiet.locator(".review")).to_be_hidden()
        quiet.locator("summary").click()
        expect(quiet.locator(".not-due")).to_have_text("Not due: no trigger has fired since the last review.")
        # "2 newer runs" names its runs: a click opens the newest.
        tab.page.locator("details.decisions-due a", has_text=ids["newer26"]).click()
        expect(tab.page).to_have_url(re.compile(rf"entries/{ids['newer26']}\.html$"))
        tab.page.go_back()


@pytest.mark.parametrize("width", WIDTHS)
def test_trend_legends_never_overlap(served: tuple, browser: Browser, width: int) -> None:
    _, url, _ = served
    with visit(browser, f"{url}trends/{WORKLOAD}.html", "trends", width) as tab:
        packages = said(tab, "section.trend-package h2")
        assert packages == ["Across torch versions", "Across torch-neuronx versions", "Across torch-xla versions"]
        boxes = tab.page.evaluate(
            """() => [...document.querySelectorAll('svg.chart')].map(svg =>
                [...svg.querySelectorAll('text.legend')].map(t => { const b = t.getBoundingClientRect();
                    return [b.left, b.top, b.right, b.bottom]; }))"""
        )
        assert sum(len(chart) for chart in boxes) >= 6
        for chart in boxes:
            for i, a in enumerate(chart):
                for b in chart[i + 1 :]:
                    apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
                    assert apart, (a, b)
