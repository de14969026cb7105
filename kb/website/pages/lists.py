"""The lists: all entries, and the entries of each facet value (kind, backend, tag, torch version ...)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kb.index import site as index_site
from kb.index.query import Filters, list_entries
from kb.website.drill import SEARCH_NAMES, within
from kb.website.pages.base import (
    FACET_PACKAGES,
    FACETS,
    Build,
    Page,
    Publisher,
    Site,
    digest,
    facet_path,
    href,
    list_row,
)

if TYPE_CHECKING:
    from markupsafe import Markup

PAGE_SIZE = 100
# Facets read straight off an index row: (facet, column of the row).
FACET_COLUMNS = tuple((dim, column.removeprefix("e.")) for dim, _, column in FACETS)


class ListPages(Publisher):
    def __init__(self, site: Site):
        super().__init__(site)
        self._rows_html: dict[tuple[str, int], Markup] = {}
        self._sidebars_html: dict[tuple[int, str | None], Markup] = {}

    def pages(self, build: Build) -> Iterator[Page]:
        """All entries, and the entries of each facet value, newest first, PAGE_SIZE a page.

        The index is read once (every row, then which tags and versions each entry has) and the rows are
        dealt to the facet values in one pass: a query per value would read the index hundreds of times.
        """
        db, facets = self.site.db, self.site.facets
        why = self.site.failure_notes
        rows = [dict(list_row(row), why=why.get(row["id"])) for row in list_entries(db, Filters(), limit=None)]
        tags: dict[str, list[str]] = {}
        for entry_id, tag in index_site.entry_tags(db):
            tags.setdefault(entry_id, []).append(tag)
        versions: dict[str, list[tuple[str, str]]] = {}
        for entry_id, package, version in index_site.run_versions(db, FACET_PACKAGES):
            versions.setdefault(entry_id, []).append((f"package:{package}", version))
        dealt: dict[tuple[str, str], list[dict[str, Any]]] = {}
        keyed: dict[str, list[tuple[str, str]]] = {}  # each row's facet values: counted within each list it is on
        for row in rows:
            keys = [(dim, row[column]) for dim, column in FACET_COLUMNS if row[column] is not None]
            keys += [("tag", tag) for tag in tags.get(row["id"], ())]
            keys += versions.get(row["id"], [])
            keyed[row["id"]] = keys
            for key in keys:
                dealt.setdefault(key, []).append(row)
        sidebar = digest(facets)
        # Each row is on several pages (all entries, its backend, its workload ...): its text for the keys, once.
        texts = {row["id"]: repr((*row.values(), self.site.paths[row["id"]])) for row in rows}
        yield from self._paged("list/index", "All entries", rows, texts, facets, sidebar, None)
        for dim, label, values in facets:
            for value, _ in values:
                stem = facet_path(dim, value)[: -len(".html")]
                chosen = dealt.get((dim, value), [])
                drill = within(facets, (keyed[row["id"]] for row in chosen), dim)
                yield from self._paged(stem, f"{label}: {value}", chosen, texts, drill, digest(drill), dim, value)

    def _paged(
        self,
        stem: str,
        title: str,
        rows: list[dict[str, Any]],
        texts: dict[str, str],
        facets: list,
        sidebar: str,
        dim: str | None,
        value: str | None = None,
    ) -> Iterator[Page]:
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        for number in range(1, pages + 1):
            path = f"{stem}.html" if number == 1 else f"{stem}-{number}.html"
            chunk = rows[(number - 1) * PAGE_SIZE :][:PAGE_SIZE]
            # The key hashes the rows as text: cheaper than the page data as JSON, for thousands of pages.
            shown = "\n".join(texts[row["id"]] for row in chunk)
            key = digest("listing", path, title, sidebar, len(rows), hashlib.sha256(shown.encode()).hexdigest())

            def context(chunk: list = chunk, path: str = path, number: int = number, pages: int = pages) -> dict:
                depth = path.count("/")
                return {
                    "title": title,
                    "rows": [self._row_html(row, depth) for row in chunk],
                    "total": len(rows),
                    "sidebar": self._sidebar_html(facets, depth, stem, title, dim, value),
                    "pager": _pager(stem.rsplit("/", 1)[-1], number, pages),
                    "first": (number - 1) * PAGE_SIZE + 1,
                }

            yield Page(path, "listing.html", key, context)

    # An entry's row is on every list page of its facets, and the sidebar on every list page: each is
    # rendered once per folder depth (links are relative) instead of once per page, a fifth of the CPU.
    def _row_html(self, row: dict[str, Any], depth: int) -> Markup:
        key = (row["id"], depth)
        if key not in self._rows_html:
            linked = dict(row, href=href(self.site.paths[row["id"]], depth))
            self._rows_html[key] = _macro("entry_row")(linked)
        return self._rows_html[key]

    def _sidebar_html(
        self, facets: list, depth: int, stem: str, title: str, dim: str | None, value: str | None
    ) -> Markup:
        """All entries' facets; on a facet value's pages, the counts within that list (kb.website.drill)."""
        key = (depth, stem if dim else None)
        if key not in self._sidebars_html:
            rel = "../" * depth
            self._sidebars_html[key] = (
                _macro("drill_down")(facets, rel, title, dim and SEARCH_NAMES.get(dim), value)
                if dim
                else _macro("facet_list")(facets, rel, None)
            )
        return self._sidebars_html[key]


def _macro(name: str) -> Any:
    from kb.website.render import environment  # it renders pages: imported here, where a page needs a piece

    return getattr(environment("/").get_template("macros.html").module, name)


def _pager(stem: str, number: int, pages: int) -> dict[str, Any] | None:
    if pages == 1:
        return None

    def name(n: int) -> str:
        return f"{stem}.html" if n == 1 else f"{stem}-{n}.html"

    return {
        "number": number,
        "pages": pages,
        "previous": name(number - 1) if number > 1 else None,
        "next": name(number + 1) if number < pages else None,
    }
