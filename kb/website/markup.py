"""Entry text as safe HTML: Markdown rendered, then sanitised, because entries come from run logs and people.

python-markdown passes raw HTML through (it has no safe mode), so everything it produces goes through
nh3 (the Ammonia sanitiser): a short list of tags and attributes, links only to http(s), mailto or
relative targets, no event handlers, styles or scripts. Relative links are kept only while they stay
inside the site (judged as a browser reads them: `%2e%2e` is `..`).

The work python-markdown does is bounded per text: it recurses once per level of nesting (a line of 600
`- ` is a RecursionError) and its inline patterns are quadratic in unclosed brackets (`[` * 8000 took 18 s).
A text past the bounds below is shown as written, escaped, with a line saying why, and the page build
counts it (`collecting`), so that one entry never stops or stalls the site.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Iterator
from contextvars import ContextVar
from functools import cache
from typing import Any
from urllib.parse import unquote, urlsplit

from markupsafe import Markup, escape

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "td": {"align"}, "th": {"align"}}
SCHEMES = {"http", "https", "mailto"}

MAX_CHARS = 1 << 20  # a note or log tail of a megabyte is still Markdown; past that, text
MAX_NESTING = 32  # list and quote markers opening one line
MAX_BRACKETS = 1000  # `[` and `<` in one paragraph: each unclosed one costs a pass over the rest
_NESTED = re.compile(rf"^(?:[ \t]*(?:[-*+>]|[0-9]{{1,9}}[.)])[ \t]+){{{MAX_NESTING},}}", re.M)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_plain: ContextVar[list[str] | None] = ContextVar("plain", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """The reasons texts were shown as plain text while inside this block (one per text)."""
    found: list[str] = []
    token = _plain.set(found)
    try:
        yield found
    finally:
        _plain.reset(token)


@cache
def _markdown() -> Any:
    import markdown

    return markdown.Markdown(extensions=["tables", "fenced_code", "sane_lists"], output_format="html")


def markdown_html(text: str, *, depth: int = 0) -> Markup:
    """Markdown to sanitised HTML; `depth` is how many folders below the site root the page lies."""
    import nh3

    reason = too_much(text)
    if reason is None:
        converter = _markdown()
        converter.reset()
        try:
            html = converter.convert(text)
        except RecursionError:  # nesting the pre-check did not see (indentation alone)
            converter.reset()
            reason = "it nests deeper than Python can follow"
    if reason is not None:
        found = _plain.get()
        if found is not None:
            found.append(reason)
        notice = f"Shown as written, not as Markdown: {reason}."
        return Markup('<p class="plain-notice">{}</p><pre class="plain">{}</pre>').format(notice, escape(text))
    cleaned = nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=SCHEMES,
        link_rel="noopener noreferrer nofollow",
        attribute_filter=lambda tag, name, value: _filtered(name, value, depth),
    )
    return Markup(cleaned)


def too_much(text: str) -> str | None:
    """Why a text is past what is rendered as Markdown, or None when it is within the bounds."""
    if len(text) > MAX_CHARS:
        return f"it is longer than {MAX_CHARS:,} characters"
    if _NESTED.search(text):
        return f"a line nests more than {MAX_NESTING} lists or quotes"
    if text.count("[") + text.count("<") > MAX_BRACKETS and any(
        part.count("[") + part.count("<") > MAX_BRACKETS for part in _PARAGRAPHS.split(text)
    ):
        return f"a paragraph holds more than {MAX_BRACKETS:,} brackets"
    return None


def _filtered(name: str, value: str, depth: int) -> str | None:
    return _keep_url(value, depth, loaded=name == "src") if name in ("href", "src") else value


def _keep_url(value: str, depth: int, loaded: bool = False) -> str | None:
    """Absolute http(s)/mailto links stay; a relative link stays only if it cannot climb out of the site.

    A `loaded` URL (an image's source) is fetched by merely opening the page: only the site's own files, so
    that reading the site never tells another server who read it.
    """
    parts = urlsplit(value)
    path = unquote(parts.path)  # what the browser requests: `%2e%2e/` climbs like `../`
    if parts.scheme or parts.netloc:
        if loaded:
            return None
        return value if parts.scheme.lower() in SCHEMES and (parts.scheme != "mailto" or not parts.netloc) else None
    if path.startswith("/") or "\\" in path:
        return None  # site-root paths break under a sub-path and on file://; entries never need them
    return value if inside_site(path, depth) else None


def inside_site(relative: str, depth: int) -> bool:
    """Whether a relative path, seen from a page `depth` folders deep, stays inside the site folder."""
    normal = posixpath.normpath(posixpath.join(*(["d"] * depth), relative)) if depth else posixpath.normpath(relative)
    return not (normal == ".." or normal.startswith("../") or normal.startswith("/"))
