"""Hostile entries cannot run anything on the site, load anything, or leave loopback, in a real Chromium.

Every payload tries to set `window.__pwned` or to fetch from a trap: an HTTP listener on loopback (another
port than the site's, so another origin) that records whatever reaches it. The payloads sit wherever an
entry's text ends up: the Markdown body (raw HTML, inline and reference links with `javascript:` and
`data:` in mixed case and behind entities), the title, the workload, backend and mode (which become file
names, URLs, attributes and `<option>` values), settings, the failure and the log tail. Each page that
shows them is opened with a listener for Content Security Policy violations installed before any of the
page's own content runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from browser import Tab, browser_fixture, serve, tab_fixture  # noqa: F401 (fixtures)
from conftest import run_kb, write_entry
from playwright.sync_api import expect

from kb.store.knowledge_base import KnowledgeBase

PWN = "window.__pwned=1"
WORD = "wombatquasar"  # only in the hostile entries, to find them by search
BREAKOUT = (
    "</textarea></title></option></select>\"'><script>window.__pwned=1</script><img src=x onerror=window.__pwned=1>"
)
HOSTILE = ("2025-11-03-hostile-body-e50001", "2025-11-04-hostile-fields-e50002")


def payloads(trap: str) -> list[str]:
    """One Markdown paragraph per attack; `trap` is the loopback listener's URL."""
    return [
        f"<script>{PWN}</script><script src='{trap}script.js'></script>",
        f"<img src='{trap}img.png' onerror='{PWN}'> <img src=x onerror={PWN}>",
        f"[inline](javascript:{PWN}) [upper](JaVaScRiPt:{PWN}) [spaced]( javascript:{PWN})",
        f"[entity](jav&#x61;script:{PWN}) [tabbed](java&#9;script:{PWN}) [encoded](javascript%3A{PWN})",
        f"[reference][evil] and [other][data]\n\n[evil]: javascript:{PWN}\n[data]: data:text/html;base64,PHNjcmlwdD4=",
        f'<a href="data:text/html,<script>{PWN}</script>">data</a> <a href="vbscript:msgbox(1)">vb</a>',
        f"<svg onload='{PWN}'><script>{PWN}</script><image href='{trap}svg.png'/></svg>",
        f"<iframe src='{trap}frame.html' srcdoc='<script>parent.__pwned=1</script>'></iframe>",
        f"<object data='{trap}object.swf'></object><embed src='{trap}embed.swf'>",
        f"<meta http-equiv='refresh' content='0;url={trap}refresh'><base href='{trap}'>",
        f"<p style=\"background:url('{trap}style.png')\" onmouseover='{PWN}'>styled</p>",
        f"<style>@import url('{trap}import.css'); body {{ display: none }}</style>",
        f"<link rel=stylesheet href='{trap}link.css'>",
        f"<form action='{trap}form'><button formaction='{trap}b'>go</button></form>",
        f"<details open ontoggle='{PWN}'><summary>t</summary></details><video src=x onerror='{PWN}'></video>",
        f"![image]({trap}markdown.png) ![alt](javascript:{PWN})",
        f"<a href='{trap}link' target=_blank>a link to the trap: following it is a person's choice</a>",
        f"{BREAKOUT} {WORD}",
    ]


class Trap:
    """An HTTP listener on loopback that records every request a payload manages to make."""

    def __init__(self) -> None:
        hits: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.hits = hits
        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Trap:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class Site:
    def __init__(self, url: str, trap: Trap) -> None:
        self.url = url
        self.trap = trap


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with Trap() as trap:
        top = tmp_path_factory.mktemp("hostile")
        kb, _ = KnowledgeBase.init(top / "knowledge-base")
        attacks = payloads(trap.url)
        body = "\n\n".join(attacks)
        write_entry(kb, HOSTILE[0], title=f"Hostile body {WORD}", recorded="2025-11-03T09:00:00Z", status="failed",
                    backend="cuda", mode="eager", workload={"name": "tiny-lm"}, versions={"torch": "2.9.0"},
                    timings={"step_s": {"median": 0.02, "count": 10}}, metrics={"tokens_per_s": {"value": 10.0}},
                    failure={"class": "other", "message": body, "explanation": body},
                    body=f"{body}\n\n## Output\n\n{body}\n")  # fmt: skip
        write_entry(kb, HOSTILE[1], title=f"Hostile fields {BREAKOUT}", recorded="2025-11-04T09:00:00Z",
                    status="completed", backend=BREAKOUT, mode=f"javascript:{PWN}", workload={"name": BREAKOUT},
                    versions={"torch": "2.9.1"}, settings={BREAKOUT: BREAKOUT},
                    timings={"step_s": {"median": 0.01, "count": 10}}, metrics={"tokens_per_s": {"value": 20.0}},
                    body=f"{WORD}\n")  # fmt: skip
        result = run_kb("--kb", str(kb.root), "site", "build", "--out", str(top / "out"), cwd=top)
        assert result.returncode == 0, result.stderr
        with serve(top / "out") as url:
            yield Site(url, trap)


# Installed before any of a page's own content: records CSP violations and any write to window.__pwned.
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
    (e) => window.__violations.push(`${e.effectiveDirective} ${e.blockedURI}`));
Object.defineProperty(window, '__pwned',
    {set(v) { window.__ran = (window.__ran || 0) + 1; }, get() { return undefined; }});
"""
PROBE = """() => ({
    ran: window.__ran || 0,
    handlers: [...document.querySelectorAll('*')].flatMap((el) => [...el.attributes]
        .filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => `${el.tagName} ${a.name}`)),
    links: [...document.querySelectorAll('[href]:not([rel=icon]), [src], [action], [formaction], [srcdoc]')]
        .flatMap((el) => ['href', 'src', 'action', 'formaction', 'srcdoc'].map((n) => el.getAttribute(n)))
        .filter((v) => v !== null && /^\\s*(javascript|vbscript|data)\\s*:/i.test(v)),
    elements: [...document.querySelectorAll('main script, style, iframe, object, embed, main svg:not(.chart), '
        + 'base, meta[http-equiv=refresh], link:not([href$="kb.css"]):not([rel=icon]), '
        + 'form:not(.quick-search):not(.search-form)')]
        .map((el) => el.outerHTML.slice(0, 80)),
    scripts: [...document.scripts].map((s) => s.getAttribute('src')),
    csp: document.querySelector('head > meta[http-equiv="Content-Security-Policy"]')?.content
        .includes("script-src 'self'"),
    hidden: [document.body, document.querySelector('main')].some((el) => getComputedStyle(el).display === 'none'),
})"""


def pages(site: Site) -> list[str]:
    return [
        f"entries/{HOSTILE[0]}.html",
        f"entries/{HOSTILE[1]}.html",
        "index.html",
        "list/index.html",
        "decisions.html",
        "compare/index.html",
        "compare/tiny-lm.html",
        "trends/index.html",
        "trends/tiny-lm.html",
        f"search.html?q={WORD}",
    ]


def test_no_hostile_entry_runs_script_loads_anything_or_leaves_loopback(site: Site, tab: Tab) -> None:
    page = tab.page
    page.add_init_script(WATCH)
    seen: dict[str, dict] = {}
    violations: dict[str, list[str]] = {}
    listed = [*pages(site), *_facet_pages(site, tab)]
    for path in listed:
        response = page.goto(site.url + path)
        assert response is not None and response.status == 200, path
        if path.startswith("search.html"):
            expect(page.locator("#search-status")).to_have_text("2 entries.")
        page.wait_for_load_state("networkidle")
        assert page.url == site.url + path  # no refresh or base href took the page elsewhere
        if path.startswith("entries/"):
            if page.locator("details.output").count():
                page.locator("details.output > summary").click()
            page.locator("main").hover()  # an onmouseover would fire now
        seen[path] = page.evaluate(PROBE)
        violations[path] = page.evaluate("() => window.__violations")
    expected = {"ran": 0, "handlers": [], "links": [], "elements": [], "csp": True,
                "hidden": False}  # fmt: skip
    for path, found in seen.items():
        scripts = found.pop("scripts")
        assert [s for s in scripts if not s.endswith("assets/kb.js")] == [], path
        assert found == expected, path
    assert site.trap.hits == []
    # The browser may start a request the policy then blocks (the sanitiser keeps absolute http(s) images); the
    # trap received none, and nothing was asked of any other host.
    assert [url for url in tab.foreign_requests(site.url) if not url.startswith(site.trap.url)] == []
    assert tab.errors == []
    # What the policy blocked came from the sanitised page (absolute http images are kept as links to
    # the evidence): every violation names the trap, never the site or an inline script.
    blocked = [v for found in violations.values() for v in found]
    assert all(site.trap.url.rstrip("/") in v for v in blocked), blocked
    tab.screenshot("hostile-entry")


def _facet_pages(site: Site, tab: Tab) -> list[str]:
    """The listing pages named after the hostile backend, mode and workload, as the entry page links them."""
    tab.page.goto(f"{site.url}entries/{HOSTILE[1]}.html")
    hrefs = tab.page.locator("p.facts a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert len(hrefs) == 5 and all(h.startswith("../list/") and "<" not in h and '"' not in h for h in hrefs), hrefs
    return [href.removeprefix("../") for href in hrefs]


def test_hostile_text_is_shown_as_text(site: Site, tab: Tab) -> None:
    page = tab.page
    page.goto(f"{site.url}entries/{HOSTILE[1]}.html")
    expect(page.locator("main h1")).to_have_text(f"Hostile fields {BREAKOUT}")
    assert page.title() == f"Hostile fields {BREAKOUT} · kb"
    expect(page.locator("p.facts")).to_contain_text(BREAKOUT)
    page.goto(f"{site.url}search.html")
    options = page.locator("select[data-filter=backend] option")
    expect(options).to_have_text(["any", f"{BREAKOUT} (1)", "cuda (1)"])
    assert options.nth(1).get_attribute("value") == BREAKOUT
    page.goto(f"{site.url}entries/{HOSTILE[0]}.html")
    expect(page.locator("section.body")).to_contain_text(WORD)
    hrefs = page.locator("section.body a[href]").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    # Kept: the plain http link, and `javascript%3A...`, a relative path to a missing page (no scheme in it).
    assert sorted(hrefs) == [f"{site.trap.url}link", "javascript%3Awindow.__pwned=1"]


def _status(port: int, path: str, host: str) -> str:
    """The status line the preview answers a raw GET with."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode()


def test_the_preview_answers_only_loopback_names_and_only_the_sites_own_files(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kb.website.serve import make_server

    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "bare").mkdir()
    (site / "index.html").write_text("home")
    (site / "sub" / "index.html").write_text("sub")
    (tmp_path / "private.txt").write_text("not the site's")
    (site / "leak.txt").symlink_to(tmp_path / "private.txt")
    (site / "out").symlink_to(tmp_path)
    server = make_server(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        here = f"127.0.0.1:{port}"
        answers = {
            (path, host): _status(port, path, host)
            for path, host in [
                ("/", here),
                ("/", f"localhost:{port}"),
                ("/", f"[::1]:{port}"),
                ("/sub/", here),
                ("/", f"attacker.example:{port}"),  # DNS rebinding: a name of elsewhere pointed at 127.0.0.1
                ("/leak.txt", here),
                ("/out/private.txt", here),
                ("/bare/", here),  # a folder without an index.html: never listed
                ("/%00", here),
                ("/" + "a" * 70_000, here),
            ]
        }
    finally:
        server.shutdown()
        server.server_close()
    assert [answer.split(" ", 2)[1] for answer in answers.values()] == [
        "200", "200", "200", "200", "421", "404", "404", "404", "400", "414"
    ]  # fmt: skip
    assert "Traceback" not in capsys.readouterr().err
