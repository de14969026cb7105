"""A real browser for the site's tests: Debian's Chromium driven by Playwright, offline and observed.

`browser` (module-scoped: one Chromium per test module, with a throwaway profile) and `tab` (a fresh page
per test) are fixtures: import `browser_fixture` and `tab_fixture` into a test module to use them. A `Tab`
records what a person at the console would see (console errors and warnings, uncaught exceptions) and
every request and response, so a test can say that nothing failed and nothing left this machine.
`open_tab` opens another one with context options (say, JavaScript off); `serve` puts a folder on
loopback with kb's own preview server. Screenshots go to tests/output/site/ (git-ignored) for a person.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Response, sync_playwright

from kb.website.serve import make_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parent / "output" / "site"


@dataclass
class Tab:
    """One page in its own browser context, and what it logged."""

    page: Page
    name: str  # the test's name: screenshots are named after it
    console: list[str] = field(default_factory=list)  # "error: text" / "warning: text"
    errors: list[str] = field(default_factory=list)  # uncaught exceptions in the page
    requests: list[str] = field(default_factory=list)  # every URL the page asked for, in order
    responses: list[tuple[int, str]] = field(default_factory=list)  # (status, URL)

    def problems(self) -> list[str]:
        """Console errors and warnings and uncaught exceptions so far."""
        return self.console + [f"pageerror: {error}" for error in self.errors]

    def failed_responses(self) -> list[tuple[int, str]]:
        return [(status, url) for status, url in self.responses if status >= 400]

    def foreign_requests(self, origin: str) -> list[str]:
        """Requests to anything but `origin` (e.g. http://127.0.0.1:PORT/) or a data: URL."""
        return [url for url in self.requests if not (url.startswith(origin) or url.startswith("data:"))]

    def clear(self) -> None:
        self.console.clear()
        self.errors.clear()
        self.requests.clear()
        self.responses.clear()

    def screenshot(self, what: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{self.name}-{what}.png"
        self.page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 0
        return path

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            self.console.append(f"{message.type}: {message.text} ({message.location.get('url', '')})")

    def _on_request(self, request: Request) -> None:
        self.requests.append(request.url)

    def _on_response(self, response: Response) -> None:
        self.responses.append((response.status, response.url))


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Browser]:
    """One Chromium per module, with a throwaway profile and no background traffic."""
    # Not a skip: the site's promises are only checked here, so a missing browser must fail loudly.
    assert os.access(CHROMIUM, os.X_OK), f"no browser at {CHROMIUM}: run `make browser` (Debian's chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def open_tab(browser: Browser, name: str, **context_options: object) -> Iterator[Tab]:
    """A page in a fresh context (`context_options` as for Browser.new_context, e.g. java_script_enabled=False or
    viewport={"width": 390, "height": 844}); 1280 by 900 px unless told."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **context_options})
    context.set_default_timeout(15_000)
    try:
        page = context.new_page()
        tab = Tab(page, re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-"))
        page.on("console", tab._on_console)
        page.on("pageerror", lambda error: tab.errors.append(str(error)))
        page.on("request", tab._on_request)
        page.on("response", tab._on_response)
        yield tab
    finally:
        context.close()


@pytest.fixture(name="tab")
def tab_fixture(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Tab]:
    """A fresh page for one test, named after it."""
    with open_tab(browser, request.node.name) as opened:
        yield opened


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """`folder` served on loopback by kb's own preview server; yields its URL, http://127.0.0.1:PORT/."""
    server = make_server(folder, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
