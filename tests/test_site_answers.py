"""The site's answers: the board on each workload's page and the comparisons index (checked in Chromium at 1280 and
390 px), the decisions page with each decision's evidence, key figure and the release that made it due,
evidence pages listing the decisions resting on them, and comparison pages without failed baselines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import browser_fixture, open_tab, serve  # noqa: F401 (fixtures)
from conftest import run_kb, write_entry
from playwright.sync_api import Browser, expect

from kb.store.knowledge_base import KnowledgeBase

EVIDENCE = "2026-11-10-lm-cuda-000001"


def run(kb: KnowledgeBase, entry_id: str, backend: str, rate: float | None, **fields) -> None:
    fields.setdefault("status", "completed")
    fields.setdefault("mode", "compiled")
    fields.setdefault("workload", {"name": "lm"})
    fields.setdefault("settings", {"batch": 8})
    if rate is not None:
        fields.setdefault("metrics", {"tokens_per_s": {"value": rate, "unit": "tokens/s"}})
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", backend=backend, **fields)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KnowledgeBase, Path]]:
    base, _ = KnowledgeBase.init(tmp_path_factory.mktemp("answers") / "knowledge-base")
    run(
        base,
        "2026-11-09-lm-cpu-000000",
        "cpu",
        5000.0,
        mode="eager",
        timings={"step_s": {"median": 0.3872, "p10": 0.38, "p90": 0.39, "count": 20}},
    )
    run(base, "2026-11-08-lm-cpu-000009", "cpu", 4000.0, mode="eager")
    run(base, EVIDENCE, "cuda", 640000.0, numerics={"verdict": "pass"}, versions={"torch": "2.10.0"},
        hardware={"accelerators": [{"name": "h100", "count": 64}]})  # fmt: skip
    run(base, "2026-11-11-lm-xla-000002", "xla", 50000.0, numerics={"verdict": "fail"})
    for n in (3, 4, 5):  # a backend sorted first with only failures, the newest of all
        run(base, f"2026-11-2{n}-lm-aaa-00000{n}", "aaa", None, status="failed",
            failure={"class": "compile_error", "message": "<b>neuronx-cc</b> exited 70"})  # fmt: skip
    run(base, "2026-11-26-lm-cpu-000006", "cpu", None, mode="eager", status="failed")  # newer than the completed
    run(base, "2026-11-16-lm-report-000007", "neuron", 900000.0, kind="report", status=None,
        provenance={"source": "reported", "publisher": "Vendor blog"})  # fmt: skip
    home = ("--kb", str(base.root))
    decided = run_kb(*home, "decide", "--title", "lm trains on CUDA", "--question", "Where?", "--choice", "CUDA",
                     "--evidence", EVIDENCE, "--evidence", "2026-11-16-lm-report-000007",
                     "--trigger", "release: torch")  # fmt: skip
    assert decided.returncode == 0, decided.stderr
    assert run_kb(*home, "release", "torch", "2.11.0").returncode == 0
    out = base.root / "site"
    built = run_kb(*home, "site", "build", "--out", str(out))
    assert built.returncode == 0, built.stderr
    return base, out


def test_the_board_decisions_and_evidence_pages(site: tuple[KnowledgeBase, Path]) -> None:
    _, out = site
    home = (out / "workloads" / "lm.html").read_text()  # the workload's board, one click from the home page
    assert 'href="workloads/lm.html"' in (out / "index.html").read_text()
    # One run against two: faster by its figures, without the repeats a verdict needs.
    assert "no verdict yet: cuda · compiled (compiled vs eager) is inconclusive ×2.22" in home
    for text in ("10,000 tok/s/dev", "×0 (num.)", "only failed runs (3)", "compile_error ×3", "Vendor blog",
                 f'href="../entries/{EVIDENCE}.html"'):  # fmt: skip
        assert text in home, text
    assert "&lt;b&gt;neuronx-cc&lt;/b&gt;" in home and "<b>neuronx-cc</b>" not in home  # escaped, as data
    assert "cuda · compiled (compiled vs eager) is inconclusive ×2.22" in (out / "compare" / "index.html").read_text()
    decisions = (out / "decisions.html").read_text()
    assert f'<a href="entries/{EVIDENCE}.html">{EVIDENCE}</a>: 10,000 tok/s/dev' in decisions
    assert "900,000 tok/s (reported)" in decisions
    assert re.search(r"Made due by <a href=\"entries/[^\"]+\">torch 2\.11\.0</a>", decisions)
    evidence = (out / "entries" / f"{EVIDENCE}.html").read_text()
    assert "Decisions resting on this" in evidence and "lm trains on CUDA" in evidence
    # The comparison page picks as kb compare does: each backend and mode's newest usable run, a completed
    # baseline (cpu · eager, whose newest run failed), a report beside the runs but never ranked against them.
    compared = (out / "compare" / "lm.html").read_text()
    assert "aaa · compiled: no usable run (3 failed)" in compared and "cpu · eager: no" not in compared
    columns = re.findall(r'<span class="id">([^<]+)</span>', compared)
    assert columns[0] == "2026-11-09-lm-cpu-000000" and "2026-11-26-lm-cpu-000006" not in columns
    assert "2026-11-16-lm-report-000007" in columns
    cells = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip()
             for cell in re.findall(r"<td.*?</td>", compared, re.S)]  # fmt: skip
    assert "387 ms" in cells and "5,000 tokens/s per device" in cells  # humanised, as kb compare prints them
    assert "900,000 tokens/s per device reported, not ranked" in cells
    assert "×1.28e+03" not in compared and "×180" not in compared


@pytest.mark.parametrize("width", [1280, 390])
def test_the_workload_board_fits_the_window(site: tuple[KnowledgeBase, Path], browser: Browser, width: int) -> None:
    _, out = site
    with serve(out) as url, open_tab(browser, f"board-{width}", viewport={"width": width, "height": 900}) as tab:
        page = tab.page
        assert page.goto(url + "workloads/lm.html").status == 200
        table = page.locator("section.board table.board-table")
        expect(table).to_have_count(1)
        expect(table.locator("tbody tr")).to_have_count(5)
        expect(table.locator("tbody th").first).to_have_text("aaa · compiled")
        # The page is as wide as the window: a wide table scrolls inside its own box.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        box = page.locator("section.board .scroll").bounding_box()
        assert box and box["width"] <= width
        link = table.locator("a", has_text="cuda · compiled")
        expect(link).to_be_visible()
        link.click()
        expect(page).to_have_url(re.compile(rf"entries/{EVIDENCE}\.html$"))
        tab.screenshot("workload")
        assert tab.problems() == [] and tab.failed_responses() == []
