"""Do the site's search and `kb search` agree? The top 10 of each for the queries of bench.index.

On a generated knowledge base (bench.generate, 1,000 entries, seed 1, unless a folder is given), the site is built
and served on loopback, and each query is typed into its search page in headless Chromium (as a person would);
the same query goes to `kb search --json` as a process. For each: how many entries each finds, how many of the
site's first 10 are among the CLI's first 10, and whether the first 3 are the same in the same order. Fields the
site has as filters (backend:neuron) become its filters; a failure class also goes in as its words, as the site
indexes it. A query of FILTERED is also asked with a filter on both sides (`kb search --backend neuron`).
Speed, as a ratio in the same page: the search page's query (kb's whole-word lookups, searchLikeKb in kb.js)
against Pagefind's own search of the same words, both warm, the median of REPEATS each.

    python -m bench.search_parity [KB_FOLDER]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from bench.index import QUERIES as INDEX_QUERIES
from bench.timing import machine, user_env

TOP = 10
QUERIES = (*INDEX_QUERIES, "OutOfMemoryError", "flex attention")  # the second two: the words people type
FILTERED = (("compile timeout", {"backend": "neuron"}),)  # runtime timeouts of compiled runs ranked first, once
SITE_FILTERS = ("backend", "failure", "status", "mode", "kind", "workload")
CHROMIUM = "/usr/bin/chromium"
REPEATS = 9
# In the search page, once a query has loaded its chunks: median ms of the page's search and of Pagefind's alone.
_TIMING = """async ([text, filters, repeats]) => {
  const box = document.getElementById("search");
  const pagefind = await import(`./pagefind/${box.dataset.bundles.split(" ")[0]}/pagefind.js`);
  const stopWords = new Set(box.dataset.stopWords.split(" "));
  const median = async (search) => {
    const times = [];
    for (let i = 0; i < repeats; i++) {
      const began = performance.now();
      await search();
      times.push(performance.now() - began);
    }
    return times.sort((a, b) => a - b)[Math.floor(repeats / 2)];
  };
  return [await median(() => searchLikeKb(pagefind, text, filters, stopWords)),
          await median(() => pagefind.search(text, { filters }))];
}"""


def site_form(query: str) -> tuple[str, dict[str, str]]:
    """The words and filters the site's search page takes for a CLI query."""
    words, filters = [], {}
    for part in query.split():
        name, _, value = part.partition(":")
        if value and name in SITE_FILTERS:
            filters[name] = value
            if name == "failure":
                words.append(value.replace("_", " "))
        else:
            words.append(part)
    return " ".join(words), filters


def cli_results(kb: Path, query: str, filters: dict[str, str] | None = None) -> list[str]:
    """Every id `kb search` finds, best first."""
    options = [part for name, value in (filters or {}).items() for part in (f"--{name}", value)]
    command = [sys.executable, "-m", "kb", "--kb", str(kb), "search", query, *options, "--json", "--limit", "100000"]
    done = subprocess.run(command, capture_output=True, text=True, env=user_env(), check=True)
    return [row["id"] for row in json.loads(done.stdout)["data"]]


def site_results(page, url: str, query: str, filters: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """(how many the search page finds, the ids of its first results in order)."""
    from urllib.parse import urlencode

    words, fields = site_form(query)
    page.goto(f"{url}search.html?{urlencode({'q': words, **fields, **(filters or {})})}")
    page.wait_for_function(
        "() => /entr(y|ies)[.;]|No entries/.test(document.getElementById('search-status').textContent)"
    )
    status = page.locator("#search-status").text_content() or ""
    count = int(status.split()[0].replace(",", "")) if status[:1].isdigit() else 0
    links = page.locator("#search-results li > a").evaluate_all("links => links.map(a => a.pathname)")
    return count, [link.rsplit("/", 1)[-1].removesuffix(".html") for link in links]


def measure(kb: Path) -> list[dict[str, object]]:
    """One row per query: counts on each side and the overlap of the top 10."""
    from playwright.sync_api import sync_playwright

    from kb.website.serve import make_server

    subprocess.run(
        [sys.executable, "-m", "kb", "--kb", str(kb), "site", "build"],
        env=user_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    server = make_server(kb / "site", "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    rows = []
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            for query, filters in [*((query, {}) for query in QUERIES), *FILTERED]:
                cli = cli_results(kb, query, filters)
                count, site = site_results(page, url, query, filters)
                overlap = len(set(cli[:TOP]) & set(site[:TOP]))
                words, fields = site_form(query)
                ms, alone = page.evaluate(_TIMING, [words, {**fields, **filters}, REPEATS])
                shown = " ".join([query, *(f"({name} {value})" for name, value in filters.items())])
                rows.append(
                    {
                        "query": shown,
                        "cli": len(cli),
                        "site": count,
                        "overlap": overlap,
                        "of": min(TOP, len(cli), max(count, 1)),
                        "first": cli[:3] == site[:3],
                        "ms": ms,
                        "ratio": ms / alone if alone else float("nan"),
                    }
                )
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return rows


def main(argv: list[str]) -> None:
    run(Path(argv[0]) if argv else None)


def run(kb: Path | None = None, count: int = 1000) -> None:
    """The overlap on the knowledge base `kb`, or on one of `count` generated entries."""
    with tempfile.TemporaryDirectory(prefix="kb-bench-parity-") as folder:
        if kb is None:
            from bench.generate import default_cache, generate

            kb = Path(folder) / "kb"
            generate(kb, count, seed=1, cache=default_cache())
        rows = measure(kb)
    print(f"\nsite search against kb search, top {TOP}; {machine()}")
    print(f"  {'query':<42} {'kb search':>9} {'site':>6} {'top 10 shared':>14} {'first 3 alike':>14}", end="")
    print(f" {'site ms':>8} {'x Pagefind alone':>17}")
    for row in rows:
        shared = f"{row['overlap']} of {row['of']}"
        alike = "yes" if row["first"] else "no"
        print(f"  {row['query']:<42} {row['cli']:>9,} {row['site']:>6,} {shared:>14} {alike:>14}", end="")
        print(f" {row['ms']:>8.1f} {row['ratio']:>16.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
