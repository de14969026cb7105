"""What the site shows: every page as a path, a template, and the data it is rendered from, by page kind.

Each page kind is a publisher in a module of its own (entry, lists, compare, trends, decisions, home,
missing), sharing the index read once per build (base.Site); PUBLISHERS lists them in the order the
build makes their pages. The search page names the search index built from all the others, so it is
made after them (search.search_page).
"""

from __future__ import annotations

from kb.website.pages.answer_pages import ChecklistPage, ExpectationsPage, RegressionsPage
from kb.website.pages.base import Build, Page, Publisher, Site, digest, entry_page_path, facet_path, slug
from kb.website.pages.compare import ComparePages
from kb.website.pages.decisions import DecisionsPage
from kb.website.pages.entry import EntryPages
from kb.website.pages.home import HomePage
from kb.website.pages.lists import ListPages
from kb.website.pages.missing import NotFoundPage
from kb.website.pages.search import search_page
from kb.website.pages.trends import TrendPages

PUBLISHERS: tuple[type[Publisher], ...] = (
    EntryPages, HomePage, DecisionsPage, ListPages, ComparePages, TrendPages, ChecklistPage, RegressionsPage,
    ExpectationsPage, NotFoundPage,
)  # fmt: skip


def publish(site: Site, build: Build) -> list[Page]:
    """Every page but the search page, publisher by publisher."""
    return [page for publisher in PUBLISHERS for page in publisher(site).pages(build)]


__all__ = [
    "PUBLISHERS", "Build", "EntryPages", "Page", "Publisher", "Site", "digest", "entry_page_path", "facet_path",
    "publish", "search_page", "slug",
]  # fmt: skip
