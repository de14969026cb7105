"""Facet counts within one list: on the page of `backend: neuron`, how many of *those* entries failed, per
workload, per failure class, each a link to the search page narrowed by both values (a page for every pair of
values would multiply the site's pages; the search page already filters by any of them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from urllib.parse import urlencode

# Facets as the search page's filters name them (kb.website.build.SEARCH_FILTERS); the rest cannot be searched.
SEARCH_NAMES = {"kind": "kind", "status": "status", "backend": "backend", "workload": "workload", "mode": "mode",
                "failure": "failure", "tag": "tag", "package:torch": "torch"}  # fmt: skip

Facet = tuple[str, str, list[tuple[str, int]]]  # (dimension, label, [(value, count)]), as Site.facets gives


def within(
    facets: list[Facet], keys: Iterable[list[tuple[str, str]]], dim: str, value: str
) -> list[tuple[str, str, list[tuple[str, int, str | None]]]]:
    """(dimension, label, [(value, count, search link or None)]) over the rows whose facet keys are `keys`,
    the list's own dimension left out; values by count, then name."""
    counts = Counter(key for row_keys in keys for key in row_keys)
    found = []
    for other, label, _ in facets:
        if other == dim:
            continue
        values = sorted(((v, n) for (d, v), n in counts.items() if d == other), key=lambda item: (-item[1], item[0]))
        if values:
            found.append((other, label, [(v, n, search_link(dim, value, other, v)) for v, n in values]))
    return found


def search_link(dim: str, value: str, other: str, other_value: str) -> str | None:
    """search.html narrowed by two facet values, where the search page has both as filters."""
    if dim not in SEARCH_NAMES or other not in SEARCH_NAMES:
        return None
    return "search.html?" + urlencode({SEARCH_NAMES[dim]: value, SEARCH_NAMES[other]: other_value})
