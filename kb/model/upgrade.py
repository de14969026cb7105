"""The entry format's upgrade chain, part of the entry model: one step per schema version, applied on every read.

A step is a pure function from the front matter of version N to that of version N + 1, registered in
`STEPS` under N. It sees the front matter as YAML gives it, before kb types any value (quoted text is
`str`, unquoted text is `frontmatter.Plain`) and returns a dict of the same kind; the chain sets
`schema` after each step, and kb types the result by the current schema. Reading applies every step
from an entry's version up to SCHEMA_VERSION, so entries of every earlier version load as they are;
`kb migrate --write` (kb/store/migrate.py) rewrites the files so that they no longer need it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kb.model import validation as schema

Step = Callable[[dict[str, Any]], dict[str, Any]]

# STEPS[n] turns version-n front matter into version n + 1; one entry per version below SCHEMA_VERSION.
STEPS: dict[int, Step] = {}


def written_version(raw: dict[str, Any]) -> int | None:
    """The `schema` an untyped front matter declares, read by the rule kb types integers by; None if it has none."""
    value = schema.coerce(raw.get("schema"), {"type": "integer"})
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def needs_steps(front: dict[str, Any]) -> bool:
    """Whether front matter (typed or not) is of an older version that steps lead from to SCHEMA_VERSION."""
    version = written_version(front)
    target = schema.SCHEMA_VERSION
    return version is not None and version < target and all(n in STEPS for n in range(version, target))


def upgrade(raw: dict[str, Any]) -> dict[str, Any]:
    """Untyped front matter brought to SCHEMA_VERSION through every step; `raw` itself when it is current,
    newer, or of no version a step starts from (the version check and validation then say what is wrong)."""
    if not needs_steps(raw):
        return raw
    data = raw
    for n in range(written_version(raw), schema.SCHEMA_VERSION):
        data = STEPS[n](copy.deepcopy(data))  # a copy: a step that edits in place still leaves the caller's dict
        data["schema"] = n + 1
    return data
