"""Full-text search for the site: Pagefind bundles, one per month of entries, merged in the browser.

Pagefind (its binary ships in the `pagefind-bin` wheel, so it runs offline) chunks its index, so a
query fetches only a small part of it. Indexing every page again after one edit would take seconds
at 10,000 entries, so entries are split by the month in their id: an edit re-indexes one month, and
the browser merges the months (`mergeIndex`). A part is rebuilt only when one of its pages changed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath

from kb.errors import KbError
from kb.website.pages import Page, digest

FOLDER = "pagefind"
# Pagefind's ready-made interfaces, which kb's own search page does not use: left out of every part.
UNUSED = (
    "pagefind-ui.js", "pagefind-ui.css", "pagefind-modular-ui.js", "pagefind-modular-ui.css",
    "pagefind-component-ui.js", "pagefind-component-ui.css", "pagefind-highlight.js", "wasm.unknown.pagefind",
)  # fmt: skip


def shard_of(page: Page) -> str:
    """The month an entry page's id starts with (ids begin with the UTC date): `2026-11`."""
    return PurePosixPath(page.path).name[:7]


def shards(pages: list[Page]) -> dict[str, list[Page]]:
    found: dict[str, list[Page]] = {}
    for page in pages:
        if page.search:
            found.setdefault(shard_of(page), []).append(page)
    return found


def update(out: Path, pages: list[Page], built: dict[str, str], previous: set[str]) -> dict[str, str]:
    """Rebuild the parts whose pages changed, drop the parts with no pages left; returns part -> key."""
    keys = {name: digest(sorted((p.path, p.key) for p in members)) for name, members in shards(pages).items()}
    for name in sorted(previous - set(keys)):
        shutil.rmtree(out / FOLDER / name, ignore_errors=True)
    for name, key in sorted(keys.items()):
        if built.get(name) != key or not (out / FOLDER / name / "pagefind.js").is_file():
            _index(out, name)
    return keys


def _index(out: Path, name: str) -> None:
    from pagefind_bin import get_executable

    target = out / FOLDER / name
    shutil.rmtree(target, ignore_errors=True)
    command = [
        str(get_executable()),
        "--site", str(out),
        "--glob", f"entries/**/{name}-*.html",
        "--output-path", str(target),
        "--force-language", "en",
        "--silent",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not (target / "pagefind.js").is_file():
        raise KbError(f"the search index for {name} could not be built: {(result.stderr or result.stdout).strip()}")
    for unused in UNUSED:
        (target / unused).unlink(missing_ok=True)
