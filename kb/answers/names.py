""" "Did you mean": the known names nearest to one that names nothing (rapidfuzz's similarity)."""

from __future__ import annotations

from collections.abc import Iterable

NEAREST = 3
SCORE = 60  # of 100: below this a name is not what was meant


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean compile_s?`, or the known names when none is near (empty when none is known)."""
    from rapidfuzz import fuzz, process

    names = sorted({str(n) for n in known if n})
    near = [found for found, score, _ in process.extract(name, names, scorer=fuzz.WRatio, limit=NEAREST)
            if score >= SCORE]  # fmt: skip
    if near:
        return f"; did you mean {' or '.join(near)}?"
    return f"; known: {', '.join(names[:12])}" + (" ..." if len(names) > 12 else "") if names else ""
