"""A decision's reviews (`kb revisit --ack`): one file each beside the decision, so that two reviews merge in git."""

from __future__ import annotations

import re
from typing import Any

from kb.errors import KbError
from kb.model.entry import Entry

CONFLICT = re.compile(r"(?m)^(<{7}|={7}|>{7})( |$)")  # what git leaves in a file it could not merge
REVIEWS = "reviews"  # in the decision's attachment folder: one file per review, so two reviews merge in git


def reviews_of(decision: Entry) -> list[dict[str, Any]]:
    """The decision's reviews, oldest first: its own review files, and those an older kb kept in its front matter."""
    import json

    found = [r for r in (decision.data.get("decision") or {}).get("reviews") or [] if isinstance(r, dict)]
    folder = decision.path.with_suffix("") / REVIEWS if decision.path else None
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            text = ""
            try:
                text = path.read_text("utf-8")
                item = json.loads(text)
            except (OSError, ValueError) as exc:
                what = "git conflict markers" if CONFLICT.search(text) else exc
                raise KbError(f"{path}: an unreadable review ({what}); fix or delete the file") from None
            if isinstance(item, dict):
                found.append(item)
    return sorted(found, key=lambda r: instant(str(r.get("time") or r.get("date") or "")))


def instant(text: str) -> str:
    """An entry time (to the second, `...T10:00:00Z`) or a precise one (`...T10:00:00.123456Z`) as one sortable
    string: time order breaks the ties of one second where both sides kept the precise time."""
    text = text.strip()
    if len(text) == 10:  # a day
        return f"{text}T00:00:00.000000Z"
    head = text.rstrip("Z")
    if "." not in head:
        head += ".000000"
    return head + "Z"
