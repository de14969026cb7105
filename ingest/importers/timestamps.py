"""Times read from another tool's files, checked before they become an entry's times.

A tool's clock value can be anything its file holds: NaN, -1e12, 1e308. Such a value is bad input, not
evidence (unlike a NaN loss, which is what the run measured), so it is refused with a message naming it.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()  # the last time an entry can hold


def from_epoch(seconds: float, what: str) -> datetime:
    """The UTC time `seconds` after 1970, or ValueError saying why `what` (e.g. "wall_time") is not a time."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        raise ValueError(f"{what} {seconds!r} is not a number of seconds")
    if not math.isfinite(seconds) or not 0 <= seconds <= LATEST:
        raise ValueError(f"{what} {seconds!r} is not a time (seconds since 1970, up to the year 9999)")
    return datetime.fromtimestamp(seconds, timezone.utc)
