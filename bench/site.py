"""The static site at scale: full build, one-edit rebuild, size on disk, search bytes per query, against MkDocs.

On a generated knowledge base (bench.generate, seeded) of each size, its index built first (not counted):
- a full `kb site build` into a fresh folder (build_site, in process: kb's start-up, about 0.2 s, is nothing
  beside it), in pages per second, with where the time went (index check, pages, Pagefind);
- the rebuild after one entry's body gained a line (a different entry each round, months apart), and a rebuild
  with nothing changed;
- the site's bytes and files on disk, and the Pagefind share;
- the search index bytes a browser fetches for one query, after the edits above (so with a sealed and a recent
  bundle, as a site in use has): the site served by `kb site serve`'s server, its search page opened in headless
  Chromium (Playwright), a query typed, the responses under /pagefind/ summed until the results show, index
  (page lists, word chunks, filters, excerpts) apart from Pagefind's code (its script and WebAssembly, fetched
  once per visit and then cached); then a second, different query on the same page;
- what `kb site serve` spends between rebuilds: one look for changes under the entries folder with nothing
  changed, with inotify and by walking the folder (its fallback where there is no inotify), alternated;
- the baseline: MkDocs (pinned, installed once into a venv of its own under ~/.cache/kb) building the same
  Markdown files, alternated with kb's full build (A B A B ...).
Targets at 10,000 entries: one edit rebuilt in under 5 s; under 300 KB of search index fetched for a query;
a full build at least as fast per page as MkDocs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.timing import alternate, machine, user_env

QUERIES = ("compile timeout", "out of memory")
INCREMENTAL_TARGET_S = 5.0
QUERY_TARGET_BYTES = 300_000
MKDOCS = "mkdocs==1.6.1"
MKDOCS_VENV = Path.home() / ".cache" / "kb" / "bench-mkdocs-venv"
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
MKDOCS_YML = """\
site_name: kb entries (MkDocs baseline)
theme:
  name: mkdocs
use_directory_urls: false
# One page in the navigation: MkDocs's default navigation lists every page on every page (10,000 links each).
nav:
  - index.md
"""


def run(sizes: tuple[int, ...], repeats: int, quick: bool) -> dict[str, float]:
    from bench.generate import default_cache, generate

    figures: dict[str, float] = {}
    print(f"\nstatic site (kb site build); {machine()}")
    mkdocs = _mkdocs()
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kb-bench-site-") as folder:
            began = time.perf_counter()
            kb = generate(Path(folder) / "kb", size, seed=1, cache=default_cache())
            generated = time.perf_counter() - began
            figures |= _measure(kb, Path(folder), size, repeats, quick, mkdocs, generated)
    return figures


def _measure(
    kb: Any, folder: Path, size: int, repeats: int, quick: bool, mkdocs: Path | None, generated: float
) -> dict[str, float]:
    from kb.index.sync import sync

    began = time.perf_counter()
    sync(kb)  # `kb site build` brings the index up to date first; on a knowledge base in use it already is
    indexed = time.perf_counter() - began

    # 1 and 5: full builds into fresh folders, alternated with MkDocs building the same Markdown.
    project = _mkdocs_project(kb, folder / "mkdocs") if mkdocs else None
    kb_runs: list[dict[str, float]] = []
    mk_runs: list[float] = []
    site = folder / "site"
    for _ in range(repeats):  # no warm-up round: at 10,000 entries a build takes minutes, and the files are cached
        shutil.rmtree(site, ignore_errors=True)
        kb_runs.append(_full_build(kb, site))
        if project:
            mk_runs.append(_mkdocs_build(mkdocs, project))
    full = statistics.median(run["seconds"] for run in kb_runs)
    pages = int(kb_runs[-1]["pages"])
    split = {part: statistics.median(run[part] for run in kb_runs) for part in ("sync", "pagefind")}

    # 3: the site on disk (the last full build, before any edit).
    total_bytes, files = _tree(site)
    pagefind_bytes, pagefind_files = _tree(site / "pagefind")

    # 2: one edited entry, then nothing changed; a different entry each round.
    edits = _edited_rebuilds(kb, site, rounds=2 if quick else repeats)

    # 4: bytes fetched for a query in a browser.
    search = _search_bytes(site)

    # `kb site serve` between rebuilds: the cost of one look for changes, with nothing changed.
    looks = _change_looks(kb, repeats)

    print(
        f"\n{size:,} entries (generated in {generated:.1f} s; index built in {indexed:.1f} s, not counted below); "
        f"{repeats} round{'s' if repeats != 1 else ''}, medians"
    )
    kb_rate = pages / full
    print(
        f"  full build, fresh folder           {full:9.2f} s   {pages:,} pages, {kb_rate:6.0f} pages/s "
        f"({size / full:.0f} entries/s); of which Pagefind {split['pagefind']:.1f} s, index check "
        f"{split['sync']:.2f} s, pages {full - split['pagefind'] - split['sync']:.1f} s"
    )
    figures: dict[str, float] = {}
    key = f"{size // 1000}k" if size >= 1000 else str(size)
    if mk_runs:
        mk = statistics.median(mk_runs)
        mk_pages = size + 1  # every entry and the home page (404.html aside, as for kb)
        mk_rate = mk_pages / mk
        ratio = (full / pages) / (mk / mk_pages)
        verdict = "met" if ratio <= 1 else "not met"
        mk_bytes, mk_files = _tree(_mkdocs_site(project))
        print(
            f"  MkDocs {MKDOCS.split('==')[1]}, same Markdown        {mk:9.2f} s   {mk_pages:,} pages, {mk_rate:6.0f} "
            f"pages/s; kb/MkDocs time per page {ratio:.2f}x (target <= 1x: {verdict}); its site "
            f"{mk_bytes / 1e6:.1f} MB, {mk_files:,} files"
        )
        figures |= {f"mkdocs_s_{key}": mk, f"kb_per_page_vs_mkdocs_{key}": ratio, f"mkdocs_bytes_{key}": mk_bytes}
    else:
        print("  MkDocs baseline                    skipped (MkDocs could not be installed)")
    verdict = "met" if edits["edit_s"] < INCREMENTAL_TARGET_S else "not met"
    print(
        f"  one edited entry, rebuild          {edits['edit_s']:9.2f} s   ({edits['written']:.0f} pages written, "
        f"{edits['bundles']:.0f} search bundle rebuilt; target < {INCREMENTAL_TARGET_S:.0f} s: {verdict}; "
        f"ratio {edits['edit_s'] / INCREMENTAL_TARGET_S:.2f}x the target)"
    )
    print(f"  nothing changed, rebuild           {edits['same_s']:9.2f} s")
    print(
        f"  serve: one look for changes        {looks['inotify_s'] * 1000:9.3f} ms  with inotify, against "
        f"{looks['walk_s'] * 1000:.0f} ms walking the entries folder (the fallback, once a second): "
        f"{looks['inotify_s'] / looks['walk_s']:.5f}x"
    )
    print(
        f"  site on disk                       {total_bytes / 1e6:9.1f} MB  {files:,} files; Pagefind "
        f"{pagefind_bytes / 1e6:.1f} MB ({pagefind_bytes / total_bytes:.0%}), {pagefind_files:,} files"
    )
    figures |= {
        f"full_build_s_{key}": full,
        f"pages_per_s_{key}": kb_rate,
        f"edit_rebuild_s_{key}": edits["edit_s"],
        f"same_rebuild_s_{key}": edits["same_s"],
        f"site_bytes_{key}": total_bytes,
        f"serve_look_inotify_s_{key}": looks["inotify_s"],
        f"serve_look_walk_s_{key}": looks["walk_s"],
        f"pagefind_bytes_{key}": pagefind_bytes,
    }
    if search is None:
        return figures
    for number, (query, fetched) in enumerate(zip(QUERIES, search, strict=True)):
        label = f'query {number + 1} "{query}"' + (", cold" if number == 0 else ", same page")
        verdict = "met" if fetched["index"] < QUERY_TARGET_BYTES else "not met"
        print(
            f"  {label:<35}{fetched['index'] / 1000:9.0f} KB  of search index in {fetched['requests']:.0f} "
            f"requests ({fetched['bundles']:.0f} bundles), {fetched['results']:.0f} shown in "
            f"{fetched['seconds']:.1f} s; target < {QUERY_TARGET_BYTES // 1000} KB: {verdict} "
            f"({fetched['index'] / QUERY_TARGET_BYTES:.2f}x); Pagefind's code {fetched['code'] / 1000:.0f} KB, "
            f"with the page {fetched['all'] / 1000:.0f} KB"
        )
        print(f"    {'':<33}by kind: " + ", ".join(f"{k} {v / 1000:.0f} KB" for k, v in fetched["kinds"].items()))
        figures[f"query{number + 1}_bytes_{key}"] = fetched["index"]
    return figures


# -- kb's builds ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _clocked() -> Iterator[dict[str, float]]:
    """Seconds spent in the index check and in the Pagefind runs during a build, by wrapping kb's functions."""
    import kb.index.sync
    from kb.website import search_index

    spent = {"sync": 0.0, "pagefind": 0.0}
    originals = (kb.index.sync.sync, search_index._index_bundle)

    def clock(name: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - began

        return timed

    kb.index.sync.sync = clock("sync", originals[0])
    search_index._index_bundle = clock("pagefind", originals[1])
    try:
        yield spent
    finally:
        kb.index.sync.sync, search_index._index_bundle = originals


def _full_build(kb, site: Path) -> dict[str, float]:
    from kb.website.build import build_site

    with _clocked() as spent:
        report = build_site(kb, site)
    if report.written != report.pages:
        raise RuntimeError(f"a full build into a fresh folder wrote {report.written} of {report.pages} pages")
    return {"seconds": report.seconds, "pages": report.pages, **spent}


def _edited_rebuilds(kb, site: Path, rounds: int) -> dict[str, float]:
    from kb.website.build import build_site

    paths = sorted(kb.iter_entry_paths())
    step = max(1, len(paths) // rounds)
    edit, same, written, bundles = [], [], [], []
    for round_ in range(rounds):
        victim = paths[(round_ * step) % len(paths)]  # spread over the months: file names begin with the date
        with victim.open("a", encoding="utf-8") as handle:
            handle.write(f"\nEdited in round {round_}: zyzzyva.\n")
        report = build_site(kb, site)
        edit.append(report.seconds)
        written.append(report.written)
        bundles.append(report.bundles_rebuilt)
        report = build_site(kb, site)
        if report.written:
            raise RuntimeError(f"a rebuild with nothing changed wrote {report.written} pages")
        same.append(report.seconds)
    return {
        "edit_s": statistics.median(edit),
        "same_s": statistics.median(same),
        "written": statistics.median(written),
        "bundles": statistics.median(bundles),
    }


def _change_looks(kb: Any, repeats: int) -> dict[str, float]:
    """Median seconds of one look for changes under the entries folder, nothing having changed, each way."""
    from kb.website import changes

    watchers = {"inotify_s": changes.InotifyChanges(kb.entries_path), "walk_s": changes.WalkedChanges(kb.entries_path)}
    try:
        samples = alternate({name: functools.partial(_look, watcher) for name, watcher in watchers.items()}, repeats)
    finally:
        for watcher in watchers.values():
            watcher.close()
    return {name: statistics.median(values) for name, values in samples.items()}


def _look(watcher: Any) -> float:
    began = time.perf_counter()
    watcher.changed(0)
    return time.perf_counter() - began


def _tree(folder: Path) -> tuple[int, int]:
    total = count = 0
    for base, _, names in os.walk(folder):
        for name in names:
            total += os.stat(os.path.join(base, name)).st_size
            count += 1
    return total, count


# -- search in a browser ------------------------------------------------------------------------------------


def _search_bytes(site: Path) -> list[dict[str, float]] | None:
    """Bytes the search page fetches for each query in QUERIES, typed one after the other on one page."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  search bytes: skipped (Playwright is not installed: pip install -e '.[test]')")
        return None
    from kb.website.serve import make_server

    server = make_server(site, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/search.html"
    fetched: list[tuple[str, int]] = []

    def record(response: Any) -> None:
        length = response.headers.get("content-length")
        if length is None:
            try:
                length = len(response.body())
            except Exception:  # a redirect or an aborted request has no body
                length = 0
        fetched.append((response.url, int(length)))

    results = []
    try:
        with sync_playwright() as playwright:
            try:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            except Exception as exc:
                print(f"  search bytes: skipped (Chromium did not start: {str(exc).splitlines()[0]})")
                return None
            page = browser.new_page()
            page.on("response", record)
            for number, query in enumerate(QUERIES):
                start = len(fetched)
                began = time.perf_counter()
                if number == 0:
                    page.goto(url)  # cold: the page, its script, and Pagefind's start-up count to the first query
                else:
                    page.evaluate("document.getElementById('search-results').replaceChildren()")
                page.fill("#search-input", query)
                page.locator("#search-results li").first.wait_for(timeout=120_000)
                seconds = time.perf_counter() - began
                page.wait_for_timeout(500)  # let stragglers land: none are expected once the results show
                shown = page.locator("#search-results li").count()
                mine = fetched[start:]
                pagefind = [(u, n) for u, n in mine if "/pagefind/" in u]
                kinds = _kinds(pagefind)
                results.append(
                    {
                        "index": sum(n for kind, n in kinds.items() if kind != "code"),
                        "code": kinds["code"],
                        "all": sum(n for _, n in mine),
                        "requests": len(pagefind),
                        "bundles": len({u.split("/pagefind/", 1)[1].split("/", 1)[0] for u, _ in pagefind}),
                        "results": shown,
                        "seconds": seconds,
                        "kinds": kinds,
                    }
                )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return results


def _kinds(fetched: list[tuple[str, int]]) -> dict[str, int]:
    """Bytes by kind of Pagefind file: its code (script, worker, wasm), metadata, index chunks, filters, excerpts."""
    kinds = {"code": 0, "meta": 0, "index": 0, "filter": 0, "fragment": 0}
    for url, length in fetched:
        name = url.split("?", 1)[0].rsplit("/", 1)[-1]
        kind = next((k for k in ("index", "filter", "fragment", "meta") if name.endswith(f".pf_{k}")), None)
        kinds[kind or ("meta" if name.endswith(".json") else "code")] += length
    return kinds


# -- the MkDocs baseline ------------------------------------------------------------------------------------


def _mkdocs() -> Path | None:
    """MkDocs's command in a venv of its own (made once, then reused); None, said why, when it cannot be had."""
    venv = MKDOCS_VENV
    command = venv / "bin" / "mkdocs"
    marker = venv / f".installed-{MKDOCS}"
    if marker.is_file() and command.is_file():
        return command
    print(f"  installing {MKDOCS} into {venv} (once) ...", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, text=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", MKDOCS],
            check=True,
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()
        print(f"  MkDocs baseline: skipped ({MKDOCS} could not be installed: {detail[-1] if detail else exc})")
        shutil.rmtree(venv, ignore_errors=True)
        return None
    marker.touch()
    return command


def _mkdocs_project(kb, project: Path) -> Path:
    """Every entry's Markdown file (front matter and all: MkDocs reads it as page meta) in an MkDocs project."""
    docs = project / "docs"
    docs.mkdir(parents=True)
    (project / "mkdocs.yml").write_text(MKDOCS_YML)
    (docs / "index.md").write_text("# kb entries\n\nEvery entry of the knowledge base, one page each.\n")
    for path in kb.iter_entry_paths():
        target = docs / path.relative_to(kb.entries_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return project


def _mkdocs_site(project: Path) -> Path:
    return project.parent / "mkdocs-site"


def _mkdocs_build(mkdocs: Path, project: Path) -> float:
    out = _mkdocs_site(project)
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    done = subprocess.run(
        [str(mkdocs), "build", "-q", "-f", str(project / "mkdocs.yml"), "-d", str(out)],
        env=user_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"mkdocs build failed: {done.stderr.strip()[-2000:]}")
    return seconds
