"""`kb site build` and `kb site serve` on real entries and real files (the browser tests are in test_site_browser)."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase
from kb.website.build import MANIFEST, build_site
from kb.website.render import render_page

HOSTILE = (
    '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> '
    '[click](javascript:window.__pwned=1) <a href="data:text/html,x">d</a> <svg onload="window.__pwned=1"></svg>'
)


def _entries(kb: KnowledgeBase) -> None:
    write_entry(
        kb, "2026-10-02-llama-cuda-aaaaaa", "llama on cuda", recorded="2026-10-02T10:00:00Z", status="completed",
        backend="cuda", mode="compiled", workload={"name": "llama"}, versions={"torch": "2.9.0"},
        timings={"compile_s": 41.5, "step_s": {"median": 0.2, "p10": 0.19, "p90": 0.21, "count": 50}},
        metrics={"tokens_per_s": {"value": 1200.0, "unit": "tokens/s", "better": "higher"}}, tags=["nightly"],
    )  # fmt: skip
    write_entry(
        kb, "2026-11-03-llama-neuron-bbbbbb", "llama on neuron", recorded="2026-11-03T10:00:00Z", status="failed",
        backend="neuron", mode="compiled", workload={"name": "llama"}, versions={"torch": "2.9.0"},
        failure={"class": "compile_timeout", "message": "neuronx-cc exceeded 3600 s",
                 "explanation": "The flex attention kernel has no fast path yet."},
        links={"reference": "2026-10-02-llama-cuda-aaaaaa", "supersedes": "2026-01-01-gone-cccccc"},
    )  # fmt: skip


def _site_files(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and "pagefind" not in p.parts and p.name not in (MANIFEST, ".kb-site.lock")
    }


def test_build_renders_every_page_kind_from_real_entries(kb: KnowledgeBase, tmp_path: Path) -> None:
    _entries(kb)
    recorded = run_kb("record", "--workload", "llama", "--backend", "cpu", "--", sys.executable, "-c", "print('hi')")
    assert recorded.returncode == 0, recorded.stderr
    result = run_kb("site", "build")
    assert result.returncode == 0, result.stderr
    out = kb.root / "site"
    assert re.match(r"Site: \d+ pages \(\d+ written, 0 unchanged, 0 removed\), 1 attachments copied", result.stdout)
    assert f"Open {out / 'index.html'}" in result.stdout
    pages = ("index.html", "search.html", "404.html", "decisions.html", "list/index.html", "list/backend/neuron.html",
             "list/failure/compile_timeout.html", "list/tag/nightly.html", "list/version-torch/2.9.0.html",
             "compare/llama.html", "trends/llama.html", "assets/kb.css")  # fmt: skip
    for page in pages:
        assert (out / page).is_file(), page
    assert [p.name for p in (out / "pagefind").iterdir()] == ["part-1"]  # a first build seals every page
    entry = (out / "entries/2026-11-03-llama-neuron-bbbbbb.html").read_text()
    assert "<h2>Failure: compile_timeout</h2>" in entry
    assert "The flex attention kernel has no fast path yet." in entry
    assert '<a href="../entries/2026-10-02-llama-cuda-aaaaaa.html">2026-10-02-llama-cuda-aaaaaa</a>' in entry
    assert '2026-01-01-gone-cccccc <span class="missing">(no such entry)</span>' in entry
    assert '<span data-pagefind-filter="backend">neuron</span>' in entry
    cuda = (out / "entries/2026-10-02-llama-cuda-aaaaaa.html").read_text()
    assert '<tr><th>compile</th><td class="num">41.5 s</td></tr>' in cuda
    assert "200 ms (p10 190 ms, p90 210 ms) over 50 steps" in cuda
    neuron_list = (out / "list/backend/neuron.html").read_text()
    assert "llama on neuron" in neuron_list and "llama on cuda" not in neuron_list
    comparison = (out / "compare/llama.html").read_text()
    # The failed neuron run is left out, and said to be: never a column beside completed runs.
    assert "backend cpu → cuda" in comparison and "backend cpu → cuda → neuron" not in comparison
    assert "neuron · compiled: no usable run (1 failed)" in comparison
    assert (out / "trends/llama.html").read_text().count('<svg class="chart"') >= 1


def test_recorded_output_is_copied_and_linked(kb: KnowledgeBase) -> None:
    result = run_kb("record", "--workload", "w", "--", sys.executable, "-c", "print('copied output line')")
    assert result.returncode == 0, result.stderr
    build_site(kb)
    (entry_file,) = kb.entries_path.glob("*.md")
    page = (kb.root / "site/entries" / entry_file.name).with_suffix(".html").read_text()
    log = f"{entry_file.stem}/output.log"
    assert f'<a href="{log}">{log}</a>' in page
    assert (kb.root / "site/entries" / log).read_text() == (kb.entries_path / log).read_text()
    assert '<details class="output"' in page and "copied output line" in page


def test_second_build_writes_nothing_and_an_edit_rewrites_only_what_shows_it(kb: KnowledgeBase) -> None:
    _entries(kb)
    first = build_site(kb)
    assert first.written == first.pages and first.bundles_rebuilt == first.bundles == 1
    out = kb.root / "site"
    untouched = out / "entries/2026-10-02-llama-cuda-aaaaaa.html"
    stamp = untouched.stat().st_mtime_ns
    again = build_site(kb)
    assert (again.written, again.unchanged, again.bundles_rebuilt) == (0, again.pages, 0)
    path = kb.entries_path / "2026-11-03-llama-neuron-bbbbbb.md"
    path.write_text(path.read_text().replace("llama on neuron", "llama on trainium"))
    edited = build_site(kb)
    assert (edited.bundles_rebuilt, edited.bundles) == (1, 2)  # the edited page went into the recent bundle
    assert 0 < edited.written < 15, edited.summary()
    assert untouched.stat().st_mtime_ns == stamp
    assert "llama on trainium" in (out / "entries/2026-11-03-llama-neuron-bbbbbb.html").read_text()
    assert "llama on trainium" in (out / "list/index.html").read_text()


def test_the_same_entries_give_the_same_bytes(kb: KnowledgeBase, tmp_path: Path) -> None:
    _entries(kb)
    build_site(kb, tmp_path / "one")
    build_site(kb, tmp_path / "two")
    one, two = _site_files(tmp_path / "one"), _site_files(tmp_path / "two")
    assert len(one) > 20
    assert one == two


def test_entry_pages_rendered_by_worker_processes_are_the_same_bytes(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kb.website import workers

    _entries(kb)
    build_site(kb, tmp_path / "here")
    in_this_process = []

    def render_here(kb: KnowledgeBase, out: Path, base_url: str, page: Any) -> Any:
        in_this_process.append(page.path)
        return render_page(kb, out, base_url, page)

    monkeypatch.setattr(workers, "MIN_PAGES", 1)  # large builds only, normally
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(workers, "render_page", render_here)
    report = build_site(kb, tmp_path / "workers")
    assert in_this_process and not any(path.startswith("entries/") for path in in_this_process)
    assert report.written == report.pages
    assert _site_files(tmp_path / "workers") == _site_files(tmp_path / "here")


def test_a_removed_entry_takes_its_page_along_and_foreign_files_stay(kb: KnowledgeBase) -> None:
    _entries(kb)
    out = kb.root / "site"
    out.mkdir()
    (out / "CNAME").write_text("kb.example.org\n")
    build_site(kb)
    (kb.entries_path / "2026-11-03-llama-neuron-bbbbbb.md").unlink()
    report = build_site(kb)
    assert not (out / "entries/2026-11-03-llama-neuron-bbbbbb.html").exists()
    assert not (out / "list/backend/neuron.html").exists()
    assert report.removed >= 3 and report.bundles == 1
    stale = re.search(r'data-stale="([^"]*)"', (out / "search.html").read_text())[1].split()
    assert len(stale) == 1  # the deleted page's result, dropped from the sealed bundle by the search page
    assert (out / "CNAME").read_text() == "kb.example.org\n"


def test_a_broken_entry_is_listed_and_the_rest_is_published(kb: KnowledgeBase) -> None:
    _entries(kb)
    (kb.entries_path / "2026-11-05-broken-dddddd.md").write_text("---\nschema: 1\nid: x\ntitle: [unclosed\n---\n")
    result = run_kb("site", "build")
    assert result.returncode == 0, result.stderr
    assert "kb: skipped " in result.stderr and "2026-11-05-broken-dddddd.md:" in result.stderr
    assert "1 broken entry file left out (kb check lists them)" in " ".join(result.stdout.split())
    home = (kb.root / "site/index.html").read_text()
    assert "<h2>Broken entries</h2>" in home and "<code>2026-11-05-broken-dddddd.md</code>" in home
    assert (kb.root / "site/entries/2026-10-02-llama-cuda-aaaaaa.html").is_file()


def test_hostile_entry_text_is_escaped_and_sanitised(kb: KnowledgeBase) -> None:
    write_entry(
        kb, "2026-11-06-hostile-eeeeee", "<script>alert(1)</script> title", body=f"## Notes\n\n{HOSTILE}\n",
        recorded="2026-11-06T10:00:00Z", status="failed", backend="cpu",
        failure={"class": "other", "message": "<img src=x onerror=alert(1)>", "explanation": HOSTILE},
        attachments=[{"path": "2026-11-06-hostile-eeeeee/secret.txt", "role": "file"}],
    )  # fmt: skip
    outside = kb.root.parent / "outside.txt"
    outside.write_text("not for the site\n")
    (kb.entries_path / "2026-11-06-hostile-eeeeee").mkdir()
    (kb.entries_path / "2026-11-06-hostile-eeeeee/secret.txt").symlink_to(outside)  # schema forbids '..'; a link
    build_site(kb)
    out = kb.root / "site"
    page = (out / "entries/2026-11-06-hostile-eeeeee.html").read_text()
    assert re.findall(r"<script[^>]*>", page) == ['<script defer src="../assets/kb.js">']
    assert not re.search(r"<[^>]+\son\w+\s*=", page), "an event-handler attribute survived"
    assert 'href="javascript' not in page and '<a href="data:' not in page and "<svg onload" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; title" in page
    assert not any(out.rglob("secret.txt")), "a file outside the entries folder was published"
    for listing in ("index.html", "list/index.html"):
        text = (out / listing).read_text()
        assert "&lt;script&gt;alert(1)&lt;/script&gt; title" in text and "<script>alert" not in text


def test_images_load_only_from_the_site_and_links_keep_their_targets() -> None:
    from kb.website.markup import markdown_html

    html = markdown_html(
        "![plot](plot.png) ![pixel](https://tracker.example/p.png) ![up](../../../etc/x.png) "
        "[paper](https://example.org/paper) [mail](mailto:a@example.org)",
        depth=1,
    )
    assert '<img alt="plot" src="plot.png">' in html
    assert "tracker.example" not in html and "etc/x.png" not in html  # opening a page would fetch them
    assert 'href="https://example.org/paper"' in html and 'href="mailto:a@example.org"' in html


def test_base_url_shapes_the_404_page_and_bad_values_are_refused(kb: KnowledgeBase, tmp_path: Path) -> None:
    _entries(kb)
    result = run_kb("site", "build", "--out", str(tmp_path / "www"), "--base-url", "/kb")
    assert result.returncode == 0, result.stderr
    missing = (tmp_path / "www/404.html").read_text()
    assert '<a href="/kb/index.html">the home page</a>' in missing
    assert '<link rel="stylesheet" href="/kb/assets/kb.css">' in missing
    bad = run_kb("site", "build", "--base-url", "kb/")
    assert bad.returncode == 1
    assert bad.stderr == "kb: error: --base-url 'kb/': give the path the site is served under, e.g. / or /kb/\n"
    inside = run_kb("site", "build", "--out", str(kb.entries_path / "site"))
    assert inside.returncode == 1 and "the site needs a folder of its own" in inside.stderr


def test_serve_refuses_other_hosts(kb: KnowledgeBase) -> None:
    result = run_kb("site", "serve", "--host", "0.0.0.0")
    assert result.returncode == 1
    assert result.stderr == "kb: error: --host '0.0.0.0': kb site serve listens on loopback only (127.0.0.1 or ::1)\n"


def test_serve_previews_on_loopback_and_rebuilds_on_change(kb: KnowledgeBase) -> None:
    from kb.website import serve as serving

    _entries(kb)
    lines: list[str] = []
    stop = threading.Event()
    worker = threading.Thread(
        target=serving.serve, args=(kb, None), kwargs={"port": 0, "echo": lines.append, "stop": stop}, daemon=True
    )
    worker.start()
    url = _wait_for(lambda: next((re.search(r"at (http://\S+/)", line) for line in lines if " at " in line), None))[1]
    page = url + "entries/2026-10-02-llama-cuda-aaaaaa.html"
    assert "llama on cuda" in urllib.request.urlopen(page).read().decode()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(url + "no/such/page.html")
    assert missing.value.code == 404 and b"<h1>Not found</h1>" in missing.value.read()
    path = kb.entries_path / "2026-10-02-llama-cuda-aaaaaa.md"
    path.write_text(path.read_text().replace("llama on cuda", "llama on hopper"))
    _wait_for(lambda: "llama on hopper" in urllib.request.urlopen(page).read().decode())
    _wait_for(lambda: any(line.startswith("Rebuilt: ") for line in lines))
    # An entry in a folder made while serving (watched from then on), then a change to its attachment only.
    stem = "2027-01-05-llama-tpu-dddddd"
    attached = kb.entries_path / "2027" / stem / "notes.txt"
    attached.parent.mkdir(parents=True)
    attached.write_text("first words")
    moved = write_entry(
        kb, stem, "llama on tpu", recorded="2027-01-05T10:00:00Z", status="completed",
        attachments=[{"path": f"{stem}/notes.txt", "role": "file"}],
    )  # fmt: skip
    moved.rename(attached.parent.with_suffix(".md"))
    copy = url + f"entries/2027/{stem}/notes.txt"
    _wait_for(lambda: "llama on tpu" in _fetch(url + f"entries/2027/{stem}.html") and _fetch(copy) == "first words")
    attached.write_text("second words")
    _wait_for(lambda: _fetch(copy) == "second words")
    stop.set()
    worker.join(timeout=10)
    assert not worker.is_alive()


def _fetch(url: str) -> str:
    """The page's text, or "" while it is not there."""
    try:
        return urllib.request.urlopen(url).read().decode()
    except urllib.error.HTTPError:
        return ""


def _wait_for(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_serve_hands_its_builds_indexing_the_progress_and_the_wait_note_it_is_given(kb: KnowledgeBase) -> None:
    """`kb site serve` shows its first build's indexing as `kb site build` does: the sync prints nothing itself, so
    the command line's progress and lock-wait note are passed down to every build it makes."""
    from kb.website import serve as serving

    _entries(kb)
    lines: list[str] = []
    counted: list[tuple[int, str]] = []
    stop = threading.Event()

    def indexing(items: list, label: str) -> list:
        counted.append((len(items), label))
        return items

    worker = threading.Thread(
        target=serving.serve, args=(kb, None), daemon=True,
        kwargs={"port": 0, "echo": lines.append, "stop": stop, "watch": False, "indexing": indexing,
                "waiting": lambda lock: lines.append(f"waiting for {lock}")},
    )  # fmt: skip
    worker.start()
    _wait_for(lambda: any(line.startswith("Serving ") for line in lines))
    stop.set()
    worker.join(timeout=10)
    assert counted and counted[0][0] > 0 and counted[0][1] == "Indexing", counted
    assert not any(line.startswith("waiting for") for line in lines)  # no other process held the lock
