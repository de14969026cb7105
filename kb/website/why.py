"""Why, in one line: what a list row says of a failed run beside its failure class."""

from __future__ import annotations


def failure_note(message: str | None, explanation: str | None, limit: int = 160) -> str | None:
    """Why a run failed, in one line for a list: the explanation when someone gave one, else the message's first
    line, cut at `limit` characters."""
    first_line = next((line for line in (message or "").splitlines() if line.strip()), "")
    text = (explanation or "").strip() or first_line
    if not text:
        return None
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
