"""One entry's text never stops or stalls the site build, and no relative link climbs out of the site."""

from __future__ import annotations

import pytest
from conftest import run_kb, write_entry

from kb.store.knowledge_base import KnowledgeBase
from kb.website.markup import collecting, markdown_html

HEAVY = {
    "nested": "- " * 600 + "deep",  # a RecursionError inside python-markdown
    "brackets": "[" * 50_000,  # quadratic: ran past 10 minutes
    "quotes": "> " * 2000 + "x",
    "indented": "\n".join("  " * depth + "- item" for depth in range(1500)),
}


@pytest.mark.parametrize("name", HEAVY)
def test_a_text_past_the_bounds_is_shown_as_written_and_counted(name: str) -> None:
    with collecting() as plain:
        html = markdown_html(HEAVY[name] + "\n\n<script>alert(1)</script>")
    assert len(plain) == 1
    assert html.startswith('<p class="plain-notice">Shown as written, not as Markdown: ')
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_ordinary_text_is_markdown_and_not_counted() -> None:
    tensors = "```\n" + "tensor([[1, 2], [3, 4]])\n" * 200 + "```\n\n[a link](page.html) and *emphasis*"
    with collecting() as plain:
        html = markdown_html(tensors)
    assert plain == [] and "<em>emphasis</em>" in html and '<a href="page.html"' in html


def test_one_heavy_entry_leaves_the_site_built_and_says_so(kb: KnowledgeBase) -> None:
    write_entry(kb, "2026-01-02-heavy-000001", body=HEAVY["nested"] + "\n\n" + HEAVY["brackets"] * 4,
                recorded="2026-01-02T00:00:00Z", status="completed")  # fmt: skip
    write_entry(kb, "2026-01-03-light-000002", body="*fine*", recorded="2026-01-03T00:00:00Z", status="completed")
    result = run_kb("site", "build", timeout=90)
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stdout.split())  # wrapped at 80 columns, between words: a page's name stays whole
    assert "1 pages show a text as written, too nested or bracketed for Markdown: entries/2026-01-02-heavy" in said
    assert "entries/2026-01-02-heavy-000001.html" in result.stdout
    page = (kb.root / "site" / "entries" / "2026-01-02-heavy-000001.html").read_text()
    assert "Shown as written, not as Markdown: a line nests more than 32 lists or quotes." in page
    assert "<em>fine</em>" in (kb.root / "site" / "entries" / "2026-01-03-light-000002.html").read_text()


@pytest.mark.parametrize(
    "url",
    [
        "%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "%2E%2E/%2E%2E/x.png",
        ".%2e/.%2e/secret",
        "..%2f..%2fsecret",
        "..\\..\\secret",
        "%2fetc/passwd",
    ],
)
def test_a_link_that_climbs_when_decoded_is_dropped(url: str) -> None:
    html = markdown_html(f"[x]({url}) ![y]({url})", depth=1)
    assert "href=" not in html and "src=" not in html, html


def test_an_encoded_link_inside_the_site_stays() -> None:
    assert 'href="../entries/a%20b.html"' in markdown_html("[x](../entries/a%20b.html)", depth=1)
