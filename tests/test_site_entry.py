"""Entry pages that lead with the answer, and lists that say why, built from this repository's own recorded
runs (the compiled and eager tiny-lm runs in entries/, with their loss curves) and a few hand-written entries
for what no run here produces: a failure on neuron, an entry recorded after the fact, a broken file.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase
from kb.website.build import build_site
from kb.website.pages import lists

COMPILED = "2026-11-30-tiny-lm-cpu-compiled-b5c3dc"
EAGER = "2026-11-30-tiny-lm-cpu-eager-208462"
FAILED = "2026-11-30-tiny-lm-neuron-compiled-f00001"
AFTER = "2026-11-30-tiny-lm-neuron-eager-f00002"
BROKEN = "2026-11-30-broken-f00003.md"
EXPLANATION = "neuronx-cc stalls partitioning the fused attention graph; the 2.10 release fixes it."


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, Path]:
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("entry-pages") / "kb")
    for name in (COMPILED, EAGER):
        shutil.copyfile(REPO / "entries" / f"{name}.md", kb.entries_path / f"{name}.md")
        shutil.copytree(REPO / "entries" / name, kb.entries_path / name)
    write_entry(
        kb, FAILED, "tiny-lm on neuron, compiled", recorded="2026-11-30T09:00:00Z", status="failed",
        backend="neuron", mode="compiled", workload={"name": "tiny-lm"}, versions={"torch": "2.9.0"},
        timings={"load_s": 4.0, "wall_s": 3600.2},
        failure={"class": "compile_timeout", "message": "neuronx-cc did not finish within 3600 s\nat line 2",
                 "explanation": EXPLANATION},
    )  # fmt: skip
    write_entry(
        kb, AFTER, "tiny-lm on neuron, eager, recorded from its log", recorded="2026-11-30T10:00:00Z",
        status="completed", backend="neuron", mode="eager", workload={"name": "tiny-lm"},
        versions={"torch": "2.99.0+cpu"}, hardware={"accelerators": []},
        provenance={"source": "measured", "tool": "kb record", "environment": "record_time"},
    )  # fmt: skip
    # One file, two problems: an unknown status and a recorded time that is not a time.
    (kb.entries_path / BROKEN).write_text(
        "---\nschema: 1\nid: 2026-11-30-broken-f00003\ntitle: broken\nkind: run\nstatus: exploded\n"
        "recorded: soon\n---\n"
    )
    out = kb.root.parent / "site"
    build_site(kb, out)
    return kb, out


def page(out: Path, path: str) -> str:
    return (out / path).read_text()


def section(text: str, css: str) -> str:
    match = re.search(rf'<section class="{css}"[^>]*>(.*?)</section>', text, re.S)
    assert match, f"no section.{css}"
    return match[1]


def rows(text: str, table: str) -> list[list[str]]:
    """The cells of each body row of <table class="{table}">, as text."""
    body = re.search(rf'<table class="{table}">.*?<tbody>(.*?)</tbody>', text, re.S)
    assert body, f"no table.{table}"
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body[1], re.S)
    ]


def fields(text: str) -> dict[str, str]:
    pairs = re.findall(r"<dt[^>]*>(.*?)</dt>\s*<dd>(.*?)</dd>", text, re.S)
    return {html.unescape(k): html.unescape(re.sub(r"<[^>]+>", "", v)).strip() for k, v in pairs}


def test_a_compiled_run_leads_with_its_answer_in_units(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    text = page(out, f"entries/{COMPILED}.html")
    assert fields(section(text, "headline")) == {
        "status": "completed after 19.2 s (exit 0)",
        "steady step": "34.7 ms median (p10 31.2 ms – p90 40 ms, 70 steps)",
        "throughput": "14,754 tokens/s · 230.5 samples/s",
        "metrics": "loss 0.848 at step 79",
        "preparation": "load 18.1 ms · first step 7.53 s · warm-up 309 ms · compile 7.42 s (partly warm)",
        "compile": "3 graphs, 7 frames, 4 graph breaks, 0 recompiles",
        "on device": "The target is the CPU, so CPU fallback does not apply.",
        "memory": "host peak RSS 420 MB",
    }
    assert text.index('class="headline"') < text.index('class="charts"') < text.index('class="timings"')
    failed = page(out, f"entries/{FAILED}.html")
    assert fields(section(failed, "headline"))["status"] == "failed after 1.0 h"  # 3,600 s
    assert failed.index('class="headline"') < failed.index('<section class="failure">') < failed.index("Timings")
    assert "<h2>Failure: compile_timeout</h2>" in failed and html.escape(EXPLANATION) in section(failed, "failure")


def test_compile_and_placement_evidence_are_tables_not_key_dumps(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    text = page(out, f"entries/{COMPILED}.html")
    assert "frames[0]" not in text and "graph_breaks.reasons" not in text and "placement.buffers" not in text
    readable = dict(re.findall(r'<section class="readable">\s*<h2[^>]*>([^<]+)</h2>(.*?)</section>', text, re.S))
    frames = rows(readable["Compile frames"], "records")
    assert len(frames) == 7
    assert frames[0] == ["0/0", "train_step", "3.6 s", "1.73 s", "-", "hit", "hit", ""]
    assert frames[6] == ["6/0", "torch_dynamo_resume_in_train_step_at_96", "756 ms", "702 ms", "1.7 ms", "-", "miss",
                         ""]  # fmt: skip
    breaks = re.findall(r"<dt[^>]*>(\d)×</dt>\s*<dd>(.*?)</dd>", readable["Graph breaks (3 sites, met 4×)"], re.S)
    assert [count for count, _ in breaks] == ["1", "1", "2"]
    assert breaks[2][1].startswith("Call to `torch._dynamo.graph_break()`")
    assert fields(readable["Placement"]) == {
        "parameters": "0 of 28 off cpu", "buffers": "0 of 1 off cpu", "attributes": "0 of 0 off cpu",
        "outputs": "0 of 1 off cpu",
    }  # fmt: skip
    every = re.search(r'<details class="all-fields">(.*?)</details>', text, re.S)[1]
    assert "time_spent_s.backend_compile" in every and "stayed_on_device" in every  # the rest kept, collapsed


def test_the_loss_curve_and_step_times_are_drawn_from_the_stored_series(built: tuple[KnowledgeBase, Path]) -> None:
    kb, out = built
    text = page(out, f"entries/{COMPILED}.html")
    charts = section(text, "charts")
    assert charts.count('<svg class="chart"') == 2
    (points,) = re.findall(r'<polyline class="line series-0" points="([^"]+)"', charts)
    curve = (kb.entries_path / COMPILED / "run/metric-loss.txt").read_text().split()
    assert len(points.split()) == len(curve) == 80
    ys = [float(point.split(",")[1]) for point in points.split()]
    assert ys[0] < ys[-1]  # SVG y grows downwards: the loss fell from 5.7 to 0.85
    assert "<figcaption>loss over 80 steps</figcaption>" in charts
    assert "the first step took 217× a steady one" in charts
    circles = re.findall(r"<circle[^>]*><title>([^<]+)</title>", charts)
    assert circles == ["first step: 7.53 s", "warm-up step, mean: 34.4 ms", "steady step, median: 34.7 ms "
                       "(31.2 ms to 40 ms)", "steady, fastest to slowest: 34.7 ms (28.1 ms to 74.2 ms)"]  # fmt: skip
    assert "<script" not in charts and "style=" not in charts  # inside the page's Content Security Policy
    assert '<section class="charts"' not in page(out, f"entries/{FAILED}.html")  # no series, no chart


def test_an_entry_links_its_comparison_trends_and_sibling_runs(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    links = section(page(out, f"entries/{COMPILED}.html").replace("<nav", "<section").replace("</nav>", "</section>"),
                    "neighbours")  # fmt: skip
    assert '<a href="../compare/tiny-lm.html">' in links and '<a href="../trends/tiny-lm.html">' in links
    siblings = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>', links)
    assert siblings == [(f"../entries/{EAGER}.html", "cpu · eager"), (f"../entries/{FAILED}.html", "neuron · compiled"),
                        (f"../entries/{AFTER}.html", "neuron · eager")]  # fmt: skip
    assert (out / f"entries/{EAGER}.html").read_text().count(f'href="../entries/{COMPILED}.html"') == 1


def test_a_record_time_environment_is_marked_and_kept_out_of_version_lists(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    after = page(out, f"entries/{AFTER}.html")
    assert '<p class="notice record-time"' in after and "not necessarily the one it ran on" in after
    assert 'class="notice record-time"' not in page(out, f"entries/{COMPILED}.html")
    assert not list((out / "list/version-torch").glob("2.99.0*")), "a record-time version got a list"
    assert "2.99.0" not in page(out, "list/index.html") and "2.99.0" not in page(out, "search.html")
    assert '<span data-pagefind-filter="torch">' not in after
    assert (out / "list/version-torch/2.9.0.html").is_file()  # the run-time versions keep theirs


def test_failure_rows_say_why(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    for listing in ("list/index.html", "list/backend/neuron.html", "index.html"):
        row = next(r for r in page(out, listing).split("<tr>") if FAILED in r)
        assert f'<span class="why">{html.escape(EXPLANATION)}</span>' in row, listing
        assert "compile_timeout" in row


def test_facet_counts_drill_down_within_the_list(built: tuple[KnowledgeBase, Path]) -> None:
    _, out = built
    neuron = page(out, "list/backend/neuron.html")
    sidebar = re.search(r'<aside class="facets">(.*?)</aside>', neuron, re.S)[1]
    assert "Counts within Backend: neuron" in sidebar and "<h3>Backend</h3>" not in sidebar
    status = re.search(r"<h3>Status</h3>(.*?)</section>", sidebar, re.S)[1]
    assert re.findall(r'<a href="([^"]+)">([^<]+)</a> <span class="count">(\d+)</span>', status) == [
        ("../../search.html?backend=neuron&amp;status=completed", "completed", "1"),
        ("../../search.html?backend=neuron&amp;status=failed", "failed", "1"),
    ]
    everything = re.search(r'<aside class="facets">(.*?)</aside>', page(out, "list/index.html"), re.S)[1]
    assert '<a href="../list/status/completed.html">completed</a> <span class="count">3</span>' in everything


def test_the_row_filter_says_when_it_filters_one_page(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lists, "PAGE_SIZE", 2)
    for day in range(1, 4):
        write_entry(
            kb,
            f"2026-10-0{day}-run-a0000{day}",
            f"run {day}",
            recorded=f"2026-10-0{day}T10:00:00Z",
            status="completed",
            tags=["first"] if day == 1 else [],
        )
    build_site(kb)
    first = (kb.root / "site/list/index.html").read_text()
    assert "Filter the 2 rows of this page (page 1 of 2); the search page covers them all" in first
    assert "Filter the 1 rows of this page (page 2 of 2)" in (kb.root / "site/list/index-2.html").read_text()
    assert "<label>Filter these rows <input" in (kb.root / "site/list/tag/first.html").read_text()  # one page


def test_broken_files_are_counted_and_named_relative_to_the_knowledge_base(built: tuple[KnowledgeBase, Path]) -> None:
    kb, out = built
    home = page(out, "index.html")
    assert str(kb.root) not in home and str(kb.root.parent) not in home
    problems = section(home, "problems")
    assert "1 entry file could not be read" in problems
    assert re.findall(r"<li><code>([^<]+)</code>", problems) == [BROKEN]
    assert len(re.findall(r"<li>line \d+: ", problems)) == 2
    result = run_kb("--kb", str(kb.root), "site", "build", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "; 1 broken entry file left out (kb check lists them)" in " ".join(result.stdout.split())
