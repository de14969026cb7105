"""The page a server shows for a path the site does not have: it links home through the site's base URL."""

from __future__ import annotations

from collections.abc import Iterator

from kb.website.pages.base import Build, Page, Publisher, digest


class NotFoundPage(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        yield Page("404.html", "404.html", digest("404", build.base_url), lambda: {"base_url": build.base_url})
