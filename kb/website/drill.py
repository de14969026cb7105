"""Facet counts within one list: on the page of `backend: neuron`, how many of *those* entries failed, per
workload, per failure class, each a link to the search page narrowed by both values (a page for every pair of
values would multiply the site's pages; the search page already filters by any of them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# Facets as the search page's filters name them (kb.website.pages.search.SEARCH_FILTERS); the rest cannot be searched.
SEARCH_NAMES = {"kind": "kind", "status": "status", "backend": "backend", "workload": "workload", "mode": "mode",
                "failure": "failure", "tag": "tag", "package:torch": "torch"}  # fmt: skip

Facet = tuple[str, str, list[tuple[str, int]]]  # (dimension, label, [(value, count)]), as Site.facets gives


def within(
    facets: list[Facet], keys: Iterable[list[tuple[str, str]]], dim: str
) -> list[tuple[str, str, str | None, list[tuple[str, int]]]]:
    """(dimension, label, its search filter or None, [(value, count)]) over the rows whose facet keys are `keys`,
    the list's own dimension left out; values by count, then name. Links are made when a page is rendered."""
    by_dim: dict[str, list[tuple[str, int]]] = {}
    for (other, value), count in Counter(key for row_keys in keys for key in row_keys).items():
        if other != dim:
            by_dim.setdefault(other, []).append((value, count))
    return [
        (other, label, SEARCH_NAMES.get(other), sorted(by_dim[other], key=lambda item: (-item[1], item[0])))
        for other, label, _ in facets
        if other in by_dim
    ]
