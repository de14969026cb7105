"""The site's screenshots in README.md (the home page) and docs/site.md, made again from this repository's own
knowledge base.

    .venv/bin/python docs/screenshots.py            # needs Debian's chromium (`make browser`) and playwright

Builds the shipped knowledge base (kb.toml, entries/) into a temporary folder with `kb site build`, serves
it on loopback with kb's preview server, and photographs pages in headless Chromium at a fixed size, so
the pictures follow the site as it changes. Nothing leaves this machine; the knowledge base is not written.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMAGES = HERE / "images"
CHROMIUM = "/usr/bin/chromium"
# (file, page, viewport width, height): the first screen of each page, as a reader opening it sees it.
SHOTS = (
    ("site-home.png", "index.html", 1280, 800),
    ("site-entry.png", "entries/2026-11-30-tiny-lm-cpu-compiled-b5c3dc.html", 1280, 1000),
    ("site-comparison.png", "compare/tiny-lm.html", 1280, 800),
    ("site-search.png", "search.html?q=compile", 1280, 800),
    ("site-entry-phone.png", "entries/2026-11-30-tiny-lm-cpu-compiled-b5c3dc.html", 390, 844),
    ("site-home-phone.png", "index.html", 390, 844),
)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from kb.store.knowledge_base import KnowledgeBase
    from kb.website.build import build_site
    from kb.website.serve import make_server

    with tempfile.TemporaryDirectory(prefix="kb-screenshots-") as folder:
        report = build_site(KnowledgeBase(ROOT), Path(folder) / "site")
        print(f"Site: {report.summary()}")
        server = make_server(Path(folder) / "site", "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                for name, page_path, width, height in SHOTS:
                    page = browser.new_page(viewport={"width": width, "height": height}, color_scheme="light")
                    page.goto(url + page_path, wait_until="networkidle")
                    if page_path.startswith("search.html?"):
                        page.locator("#search-results li").first.wait_for()
                    page.screenshot(path=str(IMAGES / name))
                    page.close()
                    print(f"{IMAGES / name}: {(IMAGES / name).stat().st_size / 1000:.0f} kB")
                browser.close()
        finally:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    main()
