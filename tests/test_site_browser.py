"""The built site in a real browser (Chromium through Playwright), served on loopback as `kb site serve` does.

One knowledge base of realistic entries is built once for the module (hand-written runs on cuda, neuron and
cpu across torch 2.8.0 and 2.9.0, a failed neuron compile, a hostile entry, a decision from `kb decide`
and a real `kb record` run), both at the site root and under a sub-path. Each test then reads the pages a
person would: search, filters, an entry, a trend chart, navigation, the console, and the page's defences.
"""

from __future__ import annotations

import platform
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import Tab, browser_fixture, open_tab, serve, tab_fixture  # noqa: F401 (fixtures)
from conftest import run_kb, write_entry
from playwright.sync_api import Browser, Locator, expect

from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase
from kb.text.humanize import duration

WORKLOAD = "tiny-lm"
UNIQUE = "zanzibarquux"  # only in the failed neuron run's failure explanation
HOSTILE_WORD = "quokkafrobnicate"  # only in the hostile entry's notes
ATTACKS = (
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "[click](javascript:window.__pwned=1)",
    '<a href="data:text/html,<script>alert(1)</script>">d</a>',
    '<svg onload="window.__pwned=1">',
    "<style>body{display:none}</style>",
)
HOSTILE_TITLE = 'Hostile <script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> title'
HOSTILE_MESSAGE = "RuntimeError: " + " ".join(ATTACKS)
HOSTILE_EXPLANATION = "Explained: " + " ".join(ATTACKS)


def step(median: float, count: int = 200) -> dict[str, float]:
    return {"median": median, "p10": round(median * 0.95, 4), "p90": round(median * 1.1, 4), "count": count}


def tokens(value: float) -> dict[str, object]:
    return {"tokens_per_s": {"value": value, "unit": "tok/s", "better": "higher"}}


# id -> (backend, mode, torch, status, timings, extra fields)
RUNS = {
    "2025-09-02-tiny-lm-cuda-compiled-a10001": ("cuda", "compiled", "2.8.0", "completed",
        {"load_s": 3.2, "compile_s": 41.7, "first_step_s": 0.93, "step_s": step(0.0213), "wall_s": 58.3},
        {"metrics": tokens(15200)}),
    "2025-10-03-tiny-lm-cuda-compiled-a10002": ("cuda", "compiled", "2.9.0", "completed",
        {"load_s": 3.1, "compile_s": 38.4, "first_step_s": 0.88, "step_s": step(0.0198), "wall_s": 54.9},
        {"metrics": tokens(16400)}),
    "2025-09-04-tiny-lm-neuron-compiled-b20001": ("neuron", "compiled", "2.8.0", "completed",
        {"load_s": 5.0, "compile_s": 1502.0, "first_step_s": 2.4, "step_s": step(0.035), "wall_s": 1540.0},
        {"metrics": tokens(9100)}),
    "2025-10-06-tiny-lm-neuron-compiled-b20002": ("neuron", "compiled", "2.9.0", "failed",
        {"load_s": 4.0, "wall_s": 3600.2},
        {"failure": {"class": "compile_timeout", "message": "neuronx-cc did not finish within 3600 s",
                     "explanation": f"The {UNIQUE} partitioner in neuronx-cc stalls on the fused attention graph."}}),
    "2025-09-05-tiny-lm-cpu-eager-c30001": ("cpu", "eager", "2.8.0", "completed",
        {"load_s": 1.2, "first_step_s": 1.1, "step_s": step(0.91, 20), "wall_s": 21.0}, {"metrics": tokens(350)}),
    "2025-10-07-tiny-lm-cpu-eager-c30002": ("cpu", "eager", "2.9.0", "completed",
        {"load_s": 1.1, "first_step_s": 1.0, "step_s": step(0.87, 20), "wall_s": 19.5}, {"metrics": tokens(372)}),
}  # fmt: skip
CUDA_OLD, CUDA_NEW, NEURON_OK, NEURON_FAILED, CPU_OLD, CPU_NEW = RUNS
HOSTILE = "2025-10-20-hostile-entry-d40001"


@dataclass
class BuiltSite:
    kb: KnowledgeBase
    out: Path  # built for the site root
    url: str  # where `out` is served: http://127.0.0.1:PORT/
    sub_out: Path  # built with --base-url /kb/, served from its parent folder
    sub_url: str  # http://127.0.0.1:PORT2/kb/
    recorded_run: str  # the id of the real `kb record` run
    decision: str  # the id of the `kb decide` entry
    titles: dict[str, str]  # every entry id -> its title
    backends: dict[str, str | None]  # every entry id -> its backend

    def entry(self, entry_id: str) -> str:
        return f"{self.url}entries/{entry_id}.html"


def kb_ok(kb: KnowledgeBase, *args: str) -> str:
    result = run_kb("--kb", str(kb.root), *args, cwd=kb.root.parent)
    assert result.returncode == 0, result.stderr
    return result.stderr


def write_evidence(kb: KnowledgeBase) -> None:
    for number, (entry_id, (backend, mode, torch, status, timings, extra)) in enumerate(RUNS.items()):
        write_entry(
            kb,
            entry_id,
            title=f"{WORKLOAD} on {backend} ({mode}), torch {torch}",
            recorded=f"{entry_id[:10]}T1{number}:00:00Z",
            status=status,
            backend=backend,
            mode=mode,
            workload={"name": WORKLOAD, "task": "training"},
            versions={"python": "3.11.7", "torch": torch},
            settings={"batch": 8, "seq_len": 512, "dtype": "bf16"},
            timings=timings,
            tags=["nightly", backend],
            body=f"Measured by the nightly job on {backend}.\n",
            **extra,
        )
    log = "step 1 ok\n" + "\n".join(ATTACKS) + "\n"
    (kb.entries_path / HOSTILE).mkdir()
    (kb.entries_path / HOSTILE / "output.log").write_text(log)
    notes = f"Notes about {HOSTILE_WORD}:\n\n" + "\n\n".join(ATTACKS)
    write_entry(
        kb,
        HOSTILE,
        title=HOSTILE_TITLE,
        recorded="2025-10-20T09:00:00Z",
        status="failed",
        backend="xla",
        mode="eager",
        versions={"torch": "2.9.0"},
        failure={"class": "other", "message": HOSTILE_MESSAGE, "explanation": HOSTILE_EXPLANATION},
        attachments=[{"path": f"{HOSTILE}/output.log", "role": "output", "bytes": len(log.encode())}],
        tags=["hostile"],
        body=f"{notes}\n\n## Output\n\n" + "\n".join(ATTACKS) + "\n",
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltSite]:
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("site") / "knowledge-base")
    write_evidence(kb)
    recorded = kb_ok(kb, "record", "--workload", "w", "--backend", "cpu", "--", sys.executable, "-c", "print('hi')")
    recorded_run = re.search(r"recorded (\S+) \(completed\)", recorded).group(1)
    decided = kb_ok(kb, "decide", "--title", "tiny-lm training stays on CUDA", "--question",
                    "Where does tiny-lm train?", "--choice", "CUDA", "--alternative", "Trainium",
                    "--rationale", "neuronx-cc times out compiling 2.9.0", "--evidence", NEURON_FAILED,
                    "--evidence", CUDA_NEW, "--trigger", "release: torch-neuronx", "--date", "2025-10-21")  # fmt: skip
    decision = re.search(r"recorded decision (\S+)", decided).group(1)
    out = kb.root.parent / "out"
    kb_ok(kb, "site", "build", "--out", str(out))
    www = kb.root.parent / "www"
    kb_ok(kb, "site", "build", "--out", str(www / "kb"), "--base-url", "/kb/")
    problems: list = []
    entries = list(kb.iter_entries(problems))
    assert problems == []
    titles = {e.id: e.title for e in entries}
    backends = {e.id: e.data.get("backend") for e in entries}
    with serve(out) as url, serve(www) as www_url:
        yield BuiltSite(kb, out, url, www / "kb", f"{www_url}kb/", recorded_run, decision, titles, backends)


# -- helpers ---------------------------------------------------------------------------------------------


def result_links(tab: Tab) -> list[str]:
    """The search results' links, resolved, in the order shown."""
    return tab.page.locator("#search-results li > a").evaluate_all("links => links.map(a => a.href)")


def row_links(tab: Tab) -> list[str]:
    """The links in a listing's table of entries, resolved, in the order shown."""
    return tab.page.locator("table.entries tbody tr a").evaluate_all("links => links.map(a => a.href)")


def search_for(tab: Tab, words: str, found: str) -> None:
    """Type into the search box like a person and wait for the status line to say `found`."""
    status = tab.page.locator("#search-status")
    expect(status).to_have_text("Type words, or pick filters.")  # the index loaded and the page is idle
    tab.page.locator("#search-input").press_sequentially(words)
    expect(status).to_have_text(found)


def click_and_load(tab: Tab, link: Locator) -> int:
    """Follow a link; the new page's HTTP status."""
    with tab.page.expect_navigation() as navigation:
        link.click()
    response = navigation.value
    return response.status if response else 0


def unsafe_things(tab: Tab) -> dict[str, list[str]]:
    """What a successful injection would leave in the page; every list empty on a safe page."""
    return tab.page.evaluate(
        """() => {
            const all = [...document.querySelectorAll('*')];
            const urls = all.flatMap((el) => ['href', 'src', 'action', 'formaction', 'xlink:href', 'srcdoc']
                .filter((name) => el.hasAttribute(name)).map((name) => [el, name, el.getAttribute(name)]));
            return {
                pwned: typeof window.__pwned === 'undefined' ? [] : [String(window.__pwned)],
                handlers: all.flatMap((el) => [...el.attributes].filter((a) => a.name.toLowerCase().startsWith('on'))
                    .map((a) => `${el.tagName} ${a.name}`)),
                script_urls: urls.filter(([, , v]) => /^\\s*(javascript|vbscript):/i.test(v))
                    .map(([el, n, v]) => `${el.tagName} ${n}=${v}`),
                data_links: [...document.links].filter((a) => /^\\s*data:/i.test(a.getAttribute('href')))
                    .map((a) => a.getAttribute('href')),
                inline_elements: [...document.querySelectorAll('main script, style, iframe, object, embed, main svg')]
                    .map((el) => el.outerHTML),
            };
        }"""
    )


NOTHING_UNSAFE = {"pwned": [], "handlers": [], "script_urls": [], "data_links": [], "inline_elements": []}


# -- the tests -------------------------------------------------------------------------------------------


def test_search_finds_an_entry_by_a_word_only_in_its_failure_explanation(site: BuiltSite, tab: Tab) -> None:
    assert sum(UNIQUE in path.read_text() for path in site.kb.entries_path.rglob("*.md")) == 1
    tab.page.goto(site.url + "search.html")
    search_for(tab, UNIQUE, "1 entry.")
    assert result_links(tab) == [site.entry(NEURON_FAILED)]
    result = tab.page.locator("#search-results li")
    expect(result.locator("> a")).to_have_text(site.titles[NEURON_FAILED])
    expect(result.locator(".excerpt mark")).to_have_text([UNIQUE])  # the hit, highlighted in its excerpt
    expect(result.locator(".note")).to_have_text(" neuron · failed · 2025-10-06")
    assert tab.page.url == f"{site.url}search.html?q={UNIQUE}"  # the query stays in the address, to share
    tab.screenshot("search-results")

    assert click_and_load(tab, result.locator("> a")) == 200
    assert tab.page.url == site.entry(NEURON_FAILED)
    expect(tab.page.locator("main h1")).to_have_text(site.titles[NEURON_FAILED])
    expect(tab.page.locator("section.failure h2")).to_have_text("Failure: compile_timeout")
    expect(tab.page.locator("section.failure .explanation p")).to_have_text(
        RUNS[NEURON_FAILED][5]["failure"]["explanation"]
    )
    assert tab.problems() == []


def test_filters_narrow_the_search_results_and_the_facet_pages(site: BuiltSite, browser: Browser, tab: Tab) -> None:
    page = tab.page
    page.goto(site.url + "search.html")
    expect(page.locator("#search-status")).to_have_text("Type words, or pick filters.")
    backend = page.locator("select[data-filter=backend]")
    expect(backend.locator("option")).to_have_text(["any", "cpu (3)", "cuda (2)", "neuron (2)", "xla (1)"])

    backend.select_option("neuron")  # no words: the filter alone
    expect(page.locator("#search-status")).to_have_text("2 entries.")
    assert sorted(result_links(tab)) == [site.entry(NEURON_OK), site.entry(NEURON_FAILED)]
    assert page.url == f"{site.url}search.html?backend=neuron"
    page.locator("select[data-filter=status]").select_option("failed")
    expect(page.locator("#search-status")).to_have_text("1 entry.")
    assert result_links(tab) == [site.entry(NEURON_FAILED)]
    page.locator("select[data-filter=status]").select_option("")
    backend.select_option("cpu")
    expect(page.locator("#search-status")).to_have_text("3 entries.")
    cpu = sorted(site.entry(entry_id) for entry_id, name in site.backends.items() if name == "cpu")
    assert sorted(result_links(tab)) == cpu == sorted(map(site.entry, (CPU_OLD, CPU_NEW, site.recorded_run)))
    backend.select_option("")
    expect(page.locator("#search-status")).to_have_text("Type words, or pick filters.")
    expect(page.locator("#search-results li")).to_have_count(0)

    # The pre-rendered facet page lists the same rows without any script.
    with open_tab(browser, f"{tab.name}-no-javascript", java_script_enabled=False) as plain:
        assert plain.page.goto(site.url + "list/backend/neuron.html").status == 200
        expect(plain.page.locator("main h1")).to_have_text("Backend: neuron")
        expect(plain.page.locator("main p.lead")).to_contain_text("2 entries, newest first.")
        expect(plain.page.locator("table.entries tbody tr td:nth-child(4)")).to_have_text(["neuron", "neuron"])
        assert row_links(plain) == [site.entry(NEURON_FAILED), site.entry(NEURON_OK)]  # newest first
        expect(plain.page.locator(".row-filter")).to_be_hidden()  # the script's row filter stays out of the way
        plain.screenshot("facet-page")
        assert plain.problems() == []

    # With the script, the facet page's own row filter narrows further.
    page.goto(site.url + "list/backend/neuron.html")
    expect(page.locator(".row-filter")).to_be_visible()
    page.locator(".row-filter-input").fill("compile_timeout")
    expect(page.locator("table.entries tbody tr:visible a")).to_have_text([site.titles[NEURON_FAILED]])
    assert tab.problems() == []


def test_an_entry_page_shows_timings_by_phase_and_versions(site: BuiltSite, tab: Tab) -> None:
    page = tab.page
    assert page.goto(site.entry(CUDA_OLD)).status == 200
    expect(page.locator("main h1")).to_have_text("tiny-lm on cuda (compiled), torch 2.8.0")
    phases = page.locator("section.timings table.phases tr")
    expect(phases.locator("th")).to_have_text(["load", "compile", "first step", "steady step, median", "wall"])
    expect(phases.locator("td")).to_have_text(
        ["3.2 s", "41.7 s", "930 ms", "21.3 ms (p10 20.2 ms, p90 23.4 ms) over 200 steps", "58.3 s"]
    )
    headline = page.locator("section.headline dl.fields")
    expect(headline.locator("dt")).to_have_text(["status", "steady step", "throughput", "preparation"])
    expect(headline.locator("dd").nth(2)).to_have_text("15,200 tok/s")
    versions = page.locator("section.section").filter(has=page.locator("h2", has_text=re.compile("^Versions$")))
    expect(versions.locator("dt")).to_have_text(["python", "torch"])
    expect(versions.locator("dd")).to_have_text(["3.11.7", "2.8.0"])
    metrics = page.locator("section.section").filter(has=page.locator("h2", has_text=re.compile("^Metrics$")))
    expect(metrics.locator("dd")).to_have_text(["15200 tok/s better higher"])
    backend = page.locator("p.facts .fact").filter(has_text="backend").locator("a")
    assert backend.evaluate("a => a.href") == f"{site.url}list/backend/cuda.html"
    tab.screenshot("entry")

    # A failed run shows only the phases it reached; a real `kb record` run shows what was measured here.
    page.goto(site.entry(NEURON_FAILED))
    expect(page.locator("table.phases th")).to_have_text(["load", "wall"])
    expect(page.locator("table.phases td")).to_have_text(["4 s", "1.0 h"])
    page.goto(site.entry(site.recorded_run))
    measured = Entry.read(site.kb.entries_path / f"{site.recorded_run}.md").data
    assert measured["versions"]["python"] == platform.python_version()
    versions = page.locator("section.section").filter(has=page.locator("h2", has_text=re.compile("^Versions$")))
    expect(versions.locator("dt")).to_have_text(list(measured["versions"]))
    expect(versions.locator("dd")).to_have_text(list(measured["versions"].values()))
    expect(page.locator("table.phases tr").last).to_have_text(f"wall{duration(measured['timings']['wall_s'])}")
    assert tab.problems() == []


def test_a_trend_chart_renders_its_lines_and_points(site: BuiltSite, tab: Tab) -> None:
    page = tab.page
    assert page.goto(f"{site.url}trends/{WORKLOAD}.html").status == 200
    captions = [
        f"{name} of {WORKLOAD} across torch versions, by backend and mode ({better} is better)"
        for name, better in (("compile_s", "lower"), ("first_step_s", "lower"), ("step_s", "lower"),
                             ("tokens_per_s", "higher"))
    ]  # fmt: skip
    expect(page.locator("figure.trend figcaption")).to_have_text(captions)
    expect(page.locator("svg.chart")).to_have_count(4)
    for chart in page.locator("svg.chart").all():
        box = chart.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 100, box

    step = page.locator("figure.trend").nth(2).locator("svg.chart")
    expect(step.locator("text.legend")).to_have_text(["cpu · eager", "cuda · compiled", "neuron · compiled"])
    assert step.locator("circle > title").all_text_contents() == [
        "cpu · eager · torch 2.8.0: 0.91 (n=1)",
        "cpu · eager · torch 2.9.0: 0.87 (n=1)",
        "cuda · compiled · torch 2.8.0: 0.0213 (n=1)",
        "cuda · compiled · torch 2.9.0: 0.0198 (n=1)",  # one run a side: no verdict
        "neuron · compiled · torch 2.8.0: 0.035 (n=1)",
    ]
    for circle in step.locator("circle").all():
        box = circle.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0, box
    lines = step.locator("polyline.line")
    assert [len(points.split()) for points in lines.evaluate_all("ls => ls.map(l => l.getAttribute('points'))")] == [
        2, 2, 1]  # fmt: skip
    for line in lines.all()[:2]:  # cpu and cuda: two versions each, a real line
        box = line.bounding_box()
        assert box and box["width"] > 100, box
        style = line.evaluate("l => { const s = getComputedStyle(l); return [s.fill, s.stroke, s.strokeWidth]; }")
        assert style[0] == "none" and style[1] not in ("none", "") and style[2] == "2px", style
    # The same figures as a table beside the chart.
    expect(page.locator("figure.trend").nth(2).locator("table.points tbody td:nth-child(3)")).to_have_text(
        ["0.91", "0.87", "0.0213", "0.0198", "0.035"]
    )
    tab.screenshot("trend")
    assert tab.problems() == []


NAV = {
    "Entries": "list/index.html",
    "Comparisons": "compare/index.html",
    "Trends": "trends/index.html",
    "Decisions": "decisions.html",
    "Checklist": "checklist/index.html",
    "Regressions": "regressions.html",
    "Expectations": "expectations.html",
    "Search": "search.html",
}
HEADINGS = {"Entries": "All entries", "Checklist": "Evidence checklist", "Regressions": "Regressions across releases"}


def test_navigation_and_search_work_under_a_sub_path(site: BuiltSite, tab: Tab) -> None:
    page, base = tab.page, site.sub_url
    origin = base.removesuffix("kb/")
    assert page.goto(base).status == 200  # the folder: its index.html
    expect(page.locator("main h1")).to_have_text("Evidence")
    assert page.locator("header.top").evaluate("h => getComputedStyle(h).backgroundColor") == "rgb(245, 247, 249)"
    # Every kind of page links the same places: relative links at depths 0, 1 and 2, the base on the 404 page.
    for start in ("index.html", f"entries/{CUDA_OLD}.html", "list/version-torch/2.9.0.html", "404.html"):
        page.goto(base + start)
        nav = page.locator("header.top nav a")
        expect(nav).to_have_text(list(NAV))
        assert nav.evaluate_all("links => links.map(a => a.href)") == [base + t for t in NAV.values()], start
        assert page.locator("header.top a.brand").evaluate("a => a.href") == base + "index.html", start
    for label, target in NAV.items():  # and each loads when clicked, from the deepest page
        page.goto(base + "list/version-torch/2.9.0.html")
        assert click_and_load(tab, page.locator("header.top nav a", has_text=label)) == 200, label
        assert page.url == base + target, label
        expect(page.locator("main h1")).to_have_text(HEADINGS.get(label, label))
    assert click_and_load(tab, page.locator("header.top a.brand")) == 200
    assert page.url == base + "index.html"

    page.goto(base + "list/index.html")
    assert click_and_load(tab, page.locator("table.entries a", has_text=site.titles[CUDA_OLD])) == 200
    assert page.url == f"{base}entries/{CUDA_OLD}.html"
    expect(page.locator("main h1")).to_have_text(site.titles[CUDA_OLD])
    assert click_and_load(tab, page.locator("p.facts a", has_text="compiled")) == 200
    assert page.url == f"{base}list/mode/compiled.html"
    page.goto(base + "compare/index.html")
    assert click_and_load(tab, page.locator("main a", has_text=WORKLOAD)) == 200
    assert page.url == f"{base}compare/{WORKLOAD}.html"
    assert click_and_load(tab, page.locator("main a", has_text="Trends across versions")) == 200
    assert page.url == f"{base}trends/{WORKLOAD}.html"
    expect(page.locator("svg.chart")).to_have_count(4)
    page.goto(base + "decisions.html")
    assert click_and_load(tab, page.locator("main h2 a")) == 200
    assert page.url == f"{base}entries/{site.decision}.html"
    page.goto(base + "404.html")  # served for any missing path, so its links are absolute under the base
    assert click_and_load(tab, page.locator("main a", has_text="the home page")) == 200
    assert page.url == base + "index.html"

    # Search from the box in the header of an entry page, and follow the result.
    page.goto(f"{base}entries/{CUDA_OLD}.html")
    page.locator("header.top input[name=q]").fill(UNIQUE)
    with page.expect_navigation():
        page.locator("header.top input[name=q]").press("Enter")
    assert page.url == f"{base}search.html?q={UNIQUE}"
    expect(page.locator("#search-status")).to_have_text("1 entry.")
    assert result_links(tab) == [f"{base}entries/{NEURON_FAILED}.html"]
    assert click_and_load(tab, page.locator("#search-results li > a")) == 200
    expect(page.locator("main h1")).to_have_text(site.titles[NEURON_FAILED])
    page.goto(base + "search.html")
    expect(page.locator("#search-status")).to_have_text("Type words, or pick filters.")
    page.locator("select[data-filter=backend]").select_option("cuda")
    expect(page.locator("#search-status")).to_have_text("2 entries.")
    assert sorted(result_links(tab)) == [f"{base}entries/{CUDA_OLD}.html", f"{base}entries/{CUDA_NEW}.html"]

    assert tab.failed_responses() == []
    assert tab.foreign_requests(origin) == []
    assert [url for url in tab.requests if url.startswith(origin) and not url.startswith(base)] == []
    assert tab.problems() == []


def test_no_console_errors_and_no_request_leaves_loopback(site: BuiltSite, tab: Tab) -> None:
    pages = [
        "index.html", "list/index.html", "list/backend/neuron.html", "list/version-torch/2.9.0.html",
        "list/tag/nightly.html", f"entries/{CUDA_OLD}.html", f"entries/{NEURON_FAILED}.html",
        f"entries/{site.recorded_run}.html", f"entries/{site.decision}.html", "compare/index.html",
        f"compare/{WORKLOAD}.html", "compare/w.html", "trends/index.html", f"trends/{WORKLOAD}.html",
        "decisions.html", "search.html", "search.html?q=compile&backend=cuda", "404.html",
    ]  # fmt: skip
    seen: dict[str, list[str]] = {}
    for path in pages:
        tab.clear()
        assert tab.page.goto(site.url + path).status == 200, path
        if path.startswith("search.html?"):
            expect(tab.page.locator("#search-status")).to_have_text("2 entries.")
        elif path == "search.html":
            expect(tab.page.locator("#search-status")).to_have_text("Type words, or pick filters.")
        problems = tab.problems() + [f"{status} {url}" for status, url in tab.failed_responses()]
        problems += [f"left loopback: {url}" for url in tab.foreign_requests(site.url)]
        seen[path] = problems
        if path == "index.html":
            tab.screenshot("home")
        elif path == f"compare/{WORKLOAD}.html":
            tab.screenshot("comparison")
    assert seen == {path: [] for path in pages}


def test_a_hostile_entry_cannot_run_script_or_hide_the_page(site: BuiltSite, tab: Tab) -> None:
    page = tab.page
    assert page.goto(site.entry(HOSTILE)).status == 200
    page.wait_for_load_state("networkidle")
    assert unsafe_things(tab) == NOTHING_UNSAFE
    assert page.evaluate("() => [...document.scripts].map(s => s.src)") == [f"{site.url}assets/kb.js"]
    # The hostile text is shown as text, where an entry shows text.
    assert page.title() == f"{HOSTILE_TITLE} · kb"
    expect(page.locator("main h1")).to_have_text(HOSTILE_TITLE)
    expect(page.locator("section.failure pre.message")).to_have_text(HOSTILE_MESSAGE)
    expect(page.locator("section.failure .explanation p")).to_have_text(HOSTILE_EXPLANATION)
    assert "<script>window.__pwned=1</script>" in page.locator("main").inner_text()
    expect(page.locator("main h1")).to_be_visible()  # the <style> did not hide the page
    expect(page.locator("section.body")).to_contain_text(f"Notes about {HOSTILE_WORD}")
    expect(page.locator("section.body a")).to_have_text(["click", "d"])  # links kept as text, without targets
    page.locator("details.output summary").click()
    expect(page.locator("details.output a")).to_have_text(["click", "d"])
    # The log is published beside the page as a file, not as HTML.
    log = page.locator("section.attachments a")
    assert log.evaluate("a => a.href") == f"{site.url}entries/{HOSTILE}/output.log"
    served = page.request.get(f"{site.url}entries/{HOSTILE}/output.log")
    assert served.status == 200 and "html" not in served.headers["content-type"]
    assert served.text() == (site.kb.entries_path / HOSTILE / "output.log").read_text()
    tab.screenshot("entry")

    page.goto(site.url + "search.html")
    search_for(tab, HOSTILE_WORD, "1 entry.")
    expect(page.locator("#search-results li > a")).to_have_text(HOSTILE_TITLE)
    expect(page.locator("#search-results .excerpt mark")).to_have_count(1)
    page.wait_for_load_state("networkidle")
    assert unsafe_things(tab) == NOTHING_UNSAFE
    assert page.evaluate("() => [...document.scripts].map(s => s.src)") == [f"{site.url}assets/kb.js"]
    tab.screenshot("search")
    assert tab.errors == []
    assert [line for line in tab.console if "Refused to" in line] == []  # nothing even tried: no CSP report
    assert tab.foreign_requests(site.url) == []


def test_opened_from_a_folder_the_pages_read_and_search_says_to_serve(site: BuiltSite, tab: Tab) -> None:
    page = tab.page
    page.goto(site.out.as_uri() + "/index.html")
    expect(page.locator("main h1")).to_have_text("Evidence")
    expect(page.locator("main p.lead")).to_contain_text(f"{len(site.titles)} entries")
    titles = page.locator("table.entries tbody tr td:last-child a").all_text_contents()
    assert sorted(titles) == sorted(site.titles.values())
    assert page.locator("header.top").evaluate("h => getComputedStyle(h).backgroundColor") == "rgb(245, 247, 249)"
    page.locator("table.entries a", has_text=site.titles[CUDA_OLD]).click()
    assert page.url == f"{site.out.as_uri()}/entries/{CUDA_OLD}.html"
    expect(page.locator("table.phases td")).to_have_count(5)
    page.locator("header.top nav a", has_text="Trends").click()
    assert page.url == f"{site.out.as_uri()}/trends/index.html"
    assert [url for url in tab.requests if not url.startswith(("file://", "data:"))] == []

    page.goto(site.out.as_uri() + "/search.html")
    expect(page.locator("#search-status")).to_contain_text("kb site serve")
    assert tab.problems() == []  # kb.js loads and runs from a folder too


def test_the_content_security_policy_blocks_inline_script(site: BuiltSite, browser: Browser, tab: Tab) -> None:
    inject = """() => {
        window.__violations = [];
        document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.effectiveDirective));
        const box = document.createElement('div');
        box.innerHTML = '<img id="probe" src="data:," onerror="window.__csp_img = 1">'
            + '<p id="styled" style="color: rgb(1, 2, 3)">styled</p>';
        document.querySelector('main').append(box);
        const script = document.createElement('script');
        script.textContent = 'window.__csp_script = 1';
        document.body.append(script);
        setTimeout('window.__csp_timer = 1', 0);  // a string run as code: eval, which the policy forbids
    }"""
    probe = """() => [typeof window.__csp_img, typeof window.__csp_script, typeof window.__csp_timer,
                     getComputedStyle(document.getElementById('styled')).color]"""
    page = tab.page
    page.goto(site.entry(CUDA_OLD))
    policy = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self' 'wasm-unsafe-eval'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["base-uri"] == "'none'"
    page.evaluate(inject)
    expect(page.locator("#probe")).to_have_count(1)
    page.wait_for_function("() => ['script-src-attr', 'script-src'].every((d) => window.__violations.includes(d))")
    assert page.evaluate(probe) == ["undefined", "undefined", "undefined", "rgb(29, 35, 42)"]  # the page's colour
    assert set(page.evaluate("() => window.__violations")) >= {
        "script-src-attr", "script-src-elem", "script-src", "style-src-attr"}  # fmt: skip
    assert tab.errors == []
    assert tab.console and all("Content Security Policy" in line for line in tab.console), tab.console

    # The same injection with the policy bypassed does run: the probe would catch a missing policy.
    with open_tab(browser, f"{tab.name}-without-policy", bypass_csp=True) as bare:
        bare.page.goto(site.entry(CUDA_OLD))
        bare.page.evaluate(inject)
        bare.page.wait_for_function("() => window.__csp_img === 1 && window.__csp_timer === 1")
        assert bare.page.evaluate(probe) == ["number", "number", "number", "rgb(1, 2, 3)"]
        assert bare.page.evaluate("() => window.__violations") == []


def test_an_edited_entry_is_found_by_its_new_words_only_and_once(kb: KnowledgeBase, tab: Tab) -> None:
    # Its own knowledge base: the edit lands in the recent bundle, and the sealed copy's results are stale.
    from kb.website.build import build_site

    def run(day: str, title: str, body: str) -> Path:
        entry_id = f"2025-10-0{day}-{title.lower().replace(' ', '-')}-e5000{day}"
        return write_entry(kb, entry_id, title, body, recorded=f"2025-10-0{day}T10:00:00Z", status="completed")

    for day in "123":
        run(day, f"Plain run {day}", "Nothing odd.")
    edited = run("9", "Edited run", "The loader used wombatfizz threads.")
    out = kb.root / "site"
    assert build_site(kb, out).bundles == 1
    edited.write_text(edited.read_text().replace("wombatfizz", "platypusbuzz"))
    report = build_site(kb, out)
    assert (report.bundles, report.bundles_rebuilt) == (2, 1), report.summary()
    with serve(out) as url:
        tab.page.goto(url + "search.html")
        search_for(tab, "platypusbuzz", "1 entry.")
        assert result_links(tab) == [url + "entries/2025-10-09-edited-run-e50009.html"]
        tab.page.goto(url + "search.html")
        search_for(tab, "wombatfizz", "0 entries.")  # the old text's result comes only from the sealed bundle
        tab.page.goto(url + "search.html")
        search_for(tab, "edited", "1 entry.")  # in the sealed and the recent bundle alike, shown once
    assert tab.problems() == []
