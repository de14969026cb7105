"""Entry text as safe HTML: Markdown rendered, then sanitised, because entries come from run logs and people.

python-markdown passes raw HTML through (it has no safe mode), so everything it produces goes through
nh3 (the Ammonia sanitiser): a short list of tags and attributes, links only to http(s), mailto or
relative targets, no event handlers, styles or scripts. Relative links are kept only while they stay
inside the site.
"""

from __future__ import annotations

import posixpath
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from markupsafe import Markup

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
    "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "td": {"align"}, "th": {"align"}}
SCHEMES = {"http", "https", "mailto"}


@cache
def _markdown() -> Any:
    import markdown

    return markdown.Markdown(extensions=["tables", "fenced_code", "sane_lists"], output_format="html")


def markdown_html(text: str, *, depth: int = 0) -> Markup:
    """Markdown to sanitised HTML; `depth` is how many folders below the site root the page lies."""
    import nh3

    converter = _markdown()
    converter.reset()
    html = converter.convert(text)
    cleaned = nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=SCHEMES,
        link_rel="noopener noreferrer nofollow",
        attribute_filter=lambda tag, name, value: _filtered(name, value, depth),
    )
    return Markup(cleaned)


def _filtered(name: str, value: str, depth: int) -> str | None:
    return _keep_url(value, depth, loaded=name == "src") if name in ("href", "src") else value


def _keep_url(value: str, depth: int, loaded: bool = False) -> str | None:
    """Absolute http(s)/mailto links stay; a relative link stays only if it cannot climb out of the site.

    A `loaded` URL (an image's source) is fetched by merely opening the page: only the site's own files, so
    that reading the site never tells another server who read it.
    """
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        if loaded:
            return None
        return value if parts.scheme.lower() in SCHEMES and (parts.scheme != "mailto" or not parts.netloc) else None
    if value.startswith("/"):
        return None  # site-root paths break under a sub-path and on file://; entries never need them
    return value if inside_site(parts.path, depth) else None


def inside_site(relative: str, depth: int) -> bool:
    """Whether a relative path, seen from a page `depth` folders deep, stays inside the site folder."""
    normal = posixpath.normpath(posixpath.join(*(["d"] * depth), relative)) if depth else posixpath.normpath(relative)
    return not (normal == ".." or normal.startswith("../") or normal.startswith("/"))
