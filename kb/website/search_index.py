"""Full-text search for the site: Pagefind bundles, merged in the browser.

Pagefind (its binary ships in the `pagefind-bin` wheel, so it runs offline) chunks its index, so a
query fetches only a small part of it: from every bundle, its page list and the chunk holding each
word. Few bundles keep a query small (at 10,000 entries, 24 monthly bundles fetched 1.5 MB for a
query, one bundle 0.24 MB), but indexing every page again after one edit takes half a minute there.

So entry pages are indexed in *sealed* bundles of at most PART_PAGES pages, and the pages added or
changed since go into one small *recent* bundle, indexed again on each build. The sealed copy of a
changed or deleted page is *stale*: the search page drops its result (Pagefind names a result by its
fragment, which kb reads back from each bundle). When the recent bundle and the stale pages grow past
RECENT_LIMIT, the sealed bundles holding them are indexed again and the recent bundle empties.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import KbError
from kb.website.pages.base import Page, digest

FOLDER = "pagefind"
RECENT = "recent"
PART_PAGES = 10_000  # Pagefind holds a bundle's pages in memory while it indexes them: about 0.25 MB each
RECENT_LIMIT = 250  # pages in the recent bundle (about 1 s to index) plus stale ones, before sealing again
# Pagefind's ready-made interfaces, which kb's own search page does not use: left out of every bundle.
UNUSED = (
    "pagefind-ui.js", "pagefind-ui.css", "pagefind-modular-ui.js", "pagefind-modular-ui.css",
    "pagefind-component-ui.js", "pagefind-component-ui.css", "pagefind-highlight.js", "wasm.unknown.pagefind",
)  # fmt: skip
_SIGNATURE = b"pagefind_dcd"  # what every decompressed Pagefind file starts with


@dataclass
class SearchState:
    """What the site's search index holds, kept in the site's manifest between builds."""

    sealed: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # bundle -> page -> [key, fragment]
    recent_key: str = ""
    recent: dict[str, str] = field(default_factory=dict)  # page -> fragment
    stale: list[str] = field(default_factory=list)  # fragments of sealed pages that changed or went
    rebuilt: int = 0  # bundles indexed by the build that made this state

    @property
    def bundles(self) -> list[str]:
        return sorted(self.sealed, key=_number) + ([RECENT] if self.recent else [])

    def to_json(self) -> dict[str, Any]:
        return {"sealed": self.sealed, "recent_key": self.recent_key, "recent": self.recent, "stale": self.stale}

    @classmethod
    def from_json(cls, data: Any) -> SearchState:
        try:
            return cls(dict(data["sealed"]), str(data["recent_key"]), dict(data["recent"]), list(data["stale"]))
        except (TypeError, KeyError, ValueError):
            return cls()  # no manifest, one from before bundles were sealed, or a damaged one: index everything


def update(out: Path, pages: list[Page], state: SearchState) -> SearchState:
    """Bring the bundles under out/pagefind up to date with the entry pages; returns the new state."""
    current = {page.path: page.key for page in pages if page.search}
    sealed = {name: dict(members) for name, members in state.sealed.items() if (out / FOLDER / name).is_dir()}
    live = {path for members in sealed.values() for path, (key, _) in members.items() if current.get(path) == key}
    stale = sum(len(members) for members in sealed.values()) - len(live)
    recent = sorted(set(current) - live)
    new = SearchState(sealed=sealed)
    if len(recent) + stale > RECENT_LIMIT or (recent and not sealed):
        for name in _reseal(new.sealed, current):
            new.sealed[name] = _index_bundle(out, name, {path: current[path] for path in new.sealed[name]})
            new.rebuilt += 1
        recent = []
    if recent:
        new.recent_key = digest(sorted((path, current[path]) for path in recent))
        if new.recent_key == state.recent_key and (out / FOLDER / RECENT / "pagefind.js").is_file():
            new.recent = dict(state.recent)
        else:
            indexed = _index_bundle(out, RECENT, {path: current[path] for path in recent})
            new.recent = {path: fragment for path, (_, fragment) in indexed.items()}
            new.rebuilt += 1
    unchanged_for_search = set(new.recent.values())  # a page whose text did not change keeps its fragment
    new.stale = sorted(
        fragment
        for members in new.sealed.values()
        for path, (key, fragment) in members.items()
        if current.get(path) != key and fragment and fragment not in unchanged_for_search
    )
    folder = out / FOLDER
    for old in sorted(folder.iterdir()) if folder.is_dir() else []:
        if old.name not in new.bundles:  # the folder is kb's own: anything else in it is from an earlier layout
            shutil.rmtree(old, ignore_errors=True)
    return new


def _reseal(sealed: dict[str, dict[str, list[str]]], current: dict[str, str]) -> list[str]:
    """Give every current page a sealed bundle (its own, or the last with room); returns the bundles that changed.

    A page stays in the bundle it was sealed in, so an edit re-indexes that bundle only; new pages fill
    the last bundle, then new ones (`part-2`, ...). Pages come in path order: ids begin with the date.
    """
    changed = set()
    for name, members in sealed.items():
        for path, (key, _) in list(members.items()):
            if current.get(path) != key:
                if path in current:
                    members[path] = [current[path], ""]
                else:
                    del members[path]
                changed.add(name)
    placed = {path for members in sealed.values() for path in members}
    for path in sorted(set(current) - placed):
        name = _bundle_with_room(sealed)
        sealed.setdefault(name, {})[path] = [current[path], ""]
        changed.add(name)
    for name in [name for name in changed if not sealed.get(name)]:
        sealed.pop(name, None)
        changed.discard(name)
    return sorted(changed)


def _bundle_with_room(sealed: dict[str, dict[str, list[str]]]) -> str:
    names = sorted(sealed, key=_number)
    if names and len(sealed[names[-1]]) < PART_PAGES:
        return names[-1]
    return f"part-{_number(names[-1]) + 1 if names else 1}"


def _number(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


def _index_bundle(out: Path, name: str, pages: dict[str, str]) -> dict[str, list[str]]:
    """Index the given pages into out/pagefind/NAME; returns page -> [key, fragment]."""
    from pagefind_bin import get_executable

    target = out / FOLDER / name
    staging = out / FOLDER / f".{name}.pages"  # the bundle's pages, linked under their own paths
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for path in pages:
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(out / path, staging / path)
            except OSError:  # a file system without hard links
                shutil.copyfile(out / path, staging / path)
        command = [
            str(get_executable()),
            "--site", str(staging),
            "--output-path", str(target),
            "--force-language", "en",
            "--silent",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if result.returncode != 0 or not (target / "pagefind.js").is_file():
        raise KbError(f"the search index ({name}) could not be built: {(result.stderr or result.stdout).strip()}")
    for unused in UNUSED:
        (target / unused).unlink(missing_ok=True)
    fragments = _fragments(target)
    return {path: [key, fragments.get("/" + path, "")] for path, key in pages.items()}


def _fragments(bundle: Path) -> dict[str, str]:
    """Page URL -> the name Pagefind gives its result (the fragment file's stem), read back from the bundle."""
    found = {}
    for file in (bundle / "fragment").iterdir():
        try:
            data = gzip.decompress(file.read_bytes())
            found[json.loads(data[len(_SIGNATURE) :])["url"]] = file.name.removesuffix(".pf_fragment")
        except (OSError, EOFError, ValueError, KeyError, TypeError):  # cut short: Pagefind met a full disk
            message = f"the search index {file} is cut short (a full disk?); free some space and build again"
            raise KbError(message) from None
    return found
