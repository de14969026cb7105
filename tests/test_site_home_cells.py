"""What a board cell says, in the terminal and on the site: figures with their significant digits (a slow
backend's 0.42 samples/s is not "0"), the failure's whole message, peak memory, a reported wait with its source,
and each cell's release and date."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import browser_fixture, open_tab, serve  # noqa: F401 (fixtures)
from conftest import REPO, json_data, run_kb, write_entry
from playwright.sync_api import Browser
from test_site_home import home_pages

from kb.store.knowledge_base import KnowledgeBase
from kb.website.build import build_site

MESSAGE = (
    "neuronx-cc failed with exit code 70: ERROR 101 [NCC_EVRF009] the operator aten::_scaled_dot_product_flash_"
    "attention is not supported on Trainium; use --auto-cast=none or rewrite the attention as matmul and softmax"
)


def slow_run(kb: KnowledgeBase, entry_id: str, backend: str, rate: float, **fields) -> None:
    fields.setdefault("metrics", {"samples_per_s": {"value": rate, "unit": "samples/s"}})
    fields.setdefault("mode", "eager")
    write_entry(kb, entry_id, recorded=f"2026-11-{entry_id[8:10]}T00:00:00Z", status="completed", backend=backend,
                workload={"name": "diffusion"}, settings={"batch": 1}, **fields)  # fmt: skip


def test_a_figure_below_one_keeps_its_significant_digits(kb: KnowledgeBase) -> None:
    slow_run(kb, "2026-11-10-diffusion-cpu-000001", "cpu", 0.42)
    slow_run(kb, "2026-11-11-diffusion-xla-000002", "xla", 12.345678)
    printed = run_kb("board")
    assert printed.returncode == 0, printed.stderr
    assert "0.42 smp/s" in printed.stdout and "12.35 smp/s" in printed.stdout, printed.stdout
    assert " 0 smp/s" not in printed.stdout and "12 smp/s" not in printed.stdout


def test_a_cell_carries_the_peak_memory_of_its_runs(kb: KnowledgeBase) -> None:
    slow_run(
        kb, "2026-11-10-diffusion-cuda-000001", "cuda", 3.0, memory={"device_peak_gb": 31.5, "host_peak_rss_gb": 2.0}
    )
    slow_run(kb, "2026-11-11-diffusion-cuda-000002", "cuda", 3.1, memory={"device_peak_gb": 33.25})
    slow_run(
        kb,
        "2026-11-12-diffusion-xla-000003",
        "xla",
        4.0,
        metrics={"samples_per_s": {"value": 4.0, "unit": "samples/s"}, "peak_memory_gb": {"value": 12.0, "unit": "GB"}},
    )
    slow_run(kb, "2026-11-13-diffusion-cpu-000004", "cpu", 0.5, memory={"host_peak_rss_gb": 0.42})
    slow_run(kb, "2026-11-14-diffusion-neuron-000005", "neuron", 2.0, memory={"host_peak_rss_gb": 9.0})
    cells = {cell["backend"]: cell for cell in json_data(run_kb("board", "--json").stdout)["workloads"][0]["cells"]}
    # The highest of the runs behind the figure; the host's memory only for a run on the host's CPU.
    assert {name: cell["peak_memory_gb"] for name, cell in cells.items()} == {
        "cuda": 33.25,
        "xla": 12.0,
        "cpu": 0.42,
        "neuron": None,
    }


def test_a_reported_wait_is_a_figure_with_its_source(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-11-30-report-wait-000001", kind="report", recorded="2026-11-30T00:00:00Z",
                backend="neuron", mode="compiled", workload={"name": "gpt-oss-train"},
                metrics={"compile_s": {"value": 1637.0, "unit": "s"}},
                provenance={"source": "reported", "publisher": "SemiAnalysis", "date": "2025-10-23"})  # fmt: skip
    printed = run_kb("board")
    assert "reported, not ranked: neuron · compiled compile 27 min 17 s (SemiAnalysis)" in printed.stdout, (
        printed.stdout
    )


def test_the_summary_gives_each_backend_its_peak_memory_and_the_reruns_due(kb: KnowledgeBase) -> None:
    for day, workload, peak in ((10, "diffusion", 30.0), (11, "lm", 50.0), (12, "vision", 10.0)):
        write_entry(kb, f"2026-11-{day}-{workload}-cuda-0000{day}", recorded=f"2026-11-{day}T00:00:00Z",
                    status="completed", backend="cuda", mode="eager", workload={"name": workload},
                    versions={"torch": "2.10.0" if workload != "vision" else "2.11.0"},
                    metrics={"samples_per_s": {"value": 3.0, "unit": "samples/s"}},
                    memory={"device_peak_gb": peak})  # fmt: skip
    assert run_kb("release", "torch", "2.11.0", "--date", "2026-11-11").returncode == 0
    rows = json_data(run_kb("board", "--summary", "--json").stdout)["rows"]
    assert [(row["label"], row["peak_memory_gb"], row["rerun_due"]) for row in rows] == [("cuda · eager", 30.0, 2)]
    printed = run_kb("board", "--summary").stdout
    assert "    2 workloads due a rerun on the newest release" in printed.splitlines(), printed


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The shipped knowledge base (its reported 27-minute compile wait) and a diffusion workload: a slow cpu run with
    its memory, and neuron runs on the newest torch-neuronx that failed with a long compiler message."""
    base, _ = KnowledgeBase.init(tmp_path_factory.mktemp("cells") / "knowledge-base")
    shutil.rmtree(base.entries_path)
    shutil.copytree(REPO / "entries", base.entries_path)
    slow_run(base, "2026-11-10-diffusion-cpu-000001", "cpu", 0.42, versions={"torch": "2.10.0"},
             memory={"host_peak_rss_gb": 3.2})  # fmt: skip
    neuron = {"torch": "2.10.0", "torch-neuronx": "2.27.1"}
    for day in (11, 12):
        write_entry(base, f"2026-11-{day}-diffusion-neuron-0000{day}", recorded=f"2026-11-{day}T00:00:00Z",
                    status="failed", backend="neuron", mode="eager", workload={"name": "diffusion"},
                    settings={"batch": 1}, versions=neuron,
                    failure={"class": "compile_error", "message": MESSAGE})  # fmt: skip
    out = base.root / "site"
    build_site(base, out)
    return out


def cell_texts(page: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell)).strip() for cell in re.findall(r"<td.*?</td>", page, re.S)
    ]


def test_a_workload_page_says_what_matters_in_each_cell(site: Path) -> None:
    page = (site / "workloads" / "diffusion.html").read_text()
    cells = cell_texts(page)
    assert "0.42 smp/s 1 run; torch 2.10.0, 2026-11-10" in cells, cells  # the figure, its release and date
    assert "3.2 GB" in cells  # peak memory
    assert f"compile_error ×2 {MESSAGE}" in cells  # the whole message, never cut
    assert "fails on torch-neuronx 2.27.1: compile_error ×2" in page
    waits = (site / "workloads" / "gpt-oss-train.html").read_text()
    assert "neuron · compiled: compile 27 min 17 s</a> (SemiAnalysis, 2025-10-23)" in waits


@pytest.mark.parametrize("width", [1280, 390])
def test_a_failure_message_wraps_in_its_cell(site: Path, browser: Browser, width: int) -> None:
    with serve(site) as url, open_tab(browser, f"cells-{width}", viewport={"width": width, "height": 900}) as tab:
        page = tab.page
        assert page.goto(url + "workloads/diffusion.html").status == 200
        failed = page.locator("td.failure").filter(has=page.locator(".message"))
        message = failed.locator(".message")
        assert message.inner_text() == MESSAGE
        box = message.bounding_box()
        cell = failed.bounding_box()
        assert box and cell and box["height"] > 40, box  # several lines: wrapped
        assert box["x"] + box["width"] <= cell["x"] + cell["width"] + 0.5, (box, cell)
        assert message.evaluate("el => el.scrollWidth <= el.clientWidth")  # nothing hidden past its edge
        assert page.evaluate("document.documentElement.scrollWidth") == width
        # The board needs no sideways scrolling: on a phone each row is a card, its cells one under another.
        assert page.locator("section.board .scroll").evaluate("el => el.scrollWidth <= el.clientWidth")
        tab.screenshot("workload")
        assert tab.problems() == []


def test_the_home_summary_gives_the_compile_the_terminal_gives(kb: KnowledgeBase, tmp_path: Path) -> None:
    # neuron's compiles were tagged neither cold nor warm (their cache unknown); cuda's cold and warm.
    for day, tag, compile_s in ((10, "cold", 64.0), (11, "warm", 3.5)):
        slow_run(kb, f"2026-11-{day}-diffusion-cuda-0000{day}", "cuda", 3.0, mode="compiled", tags=[tag],
                 timings={"compile_s": compile_s})  # fmt: skip
    for day, compile_s in ((12, 2.0), (13, 3.0), (14, 2.5)):
        slow_run(kb, f"2026-11-{day}-diffusion-neuron-0000{day}", "neuron", 4.0, mode="compiled",
                 timings={"compile_s": compile_s})  # fmt: skip
    printed = run_kb("board", "--summary")
    assert printed.returncode == 0, printed.stderr
    lines = {line.split("  ")[0].strip(): line for line in printed.stdout.splitlines() if " · compiled " in line}
    home_pages(kb, tmp_path)
    page = (tmp_path / "index.html").read_text()
    table = page[page.index('<table class="summary-table">') : page.index("</table>")]
    rows = {label: cell_texts(row)[2] for label, row in re.findall(r'<th scope="row">(.*?)</th>(.*?)</tr>', table)}
    assert rows == {"cuda · compiled": "1 min 4 s / 3.5 s", "neuron · compiled": "2.5 s (unknown)"}, rows
    for label, compiled in rows.items():
        assert lines[label].endswith(f"  {compiled}"), (lines[label], compiled)
    rows = {row["label"]: row for row in json_data(run_kb("board", "--summary", "--json").stdout)["rows"]}
    assert (rows["neuron · compiled"]["other_compile_s"], rows["neuron · compiled"]["other_compile_cache"]) == (
        2.5, "unknown")  # fmt: skip
