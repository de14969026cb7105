"""Where the knowledge base is: `--kb`, else $KB_HOME, else the nearest folder upward holding a kb.toml.

Kept apart from the store (and its entry model) so that the `kb` program can find it before it loads anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from kb.errors import KbNotFound

ENV_HOME = "KB_HOME"
CONFIG_NAME = "kb.toml"  # its presence marks the root
CACHE = ".kb"  # the derived caches: the index, kb watch's journal


def find_root(explicit: Path | str | None = None, start: Path | None = None) -> Path:
    """The knowledge base named by `explicit`, else $KB_HOME, else the nearest folder upward with a kb.toml."""
    named = explicit or os.environ.get(ENV_HOME)
    if named:
        root = Path(named).expanduser().resolve()
        if not (root / CONFIG_NAME).is_file():
            source = "--kb" if explicit else f"${ENV_HOME}"
            raise KbNotFound(f"{root} is not a knowledge base (no {CONFIG_NAME}); run 'kb init {root}' or fix {source}")
        return root
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise KbNotFound(
        f"no knowledge base here: no {CONFIG_NAME} in {here} or above; run 'kb init' to make one, "
        f"or point --kb or ${ENV_HOME} at one"
    )
