"""The search page: the Pagefind bundles to merge, the stale results to drop, and the facets as filters.

It names the search index's bundles, so it is made after the index is updated from every other page
(kb.website.build), not with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.index.fulltext import STOP_WORDS
from kb.website.pages.base import Page, Site, digest

if TYPE_CHECKING:
    from kb.website.search_index import SearchState  # it indexes the other pages: it imports this package

SEARCH_FILTERS = ("kind", "status", "backend", "workload", "mode", "failure", "tag", "torch")


def search_page(site: Site, search: SearchState) -> Page:
    # The filters are the entry pages' Pagefind filters: the facets, with torch's version.
    filters = [(dim.replace("package:", ""), label, values) for dim, label, values in site.facets]
    context = {
        "bundles": search.bundles,
        "stale": search.stale,
        "facets": [f for f in filters if f[0] in SEARCH_FILTERS],
        "stop_words": sorted(STOP_WORDS),  # dropped from a query, as kb search drops them
    }
    return Page("search.html", "search.html", digest("search", context), lambda: context)
