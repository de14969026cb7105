"""The hand-over channel: how a running command gives results to `kb record`, with no dependency at all.

`kb record` (and an instrumented run on its own) names a run folder in the environment variable
KB_RUN_DIR. The command appends one JSON object per line to `$KB_RUN_DIR/events.jsonl`; any other file
it writes into the folder becomes an attachment of the entry. Three events exist:

    {"event": "metric", "name": "tokens_per_s", "value": 5120.0, "unit": "tokens/s", "step": 200, "better": "higher"}
    {"event": "set", "field": "timings.compile_s", "value": 8.8}
    {"event": "note", "text": "Needed static shapes: padded every batch to 64 tokens."}

`metric` keeps the last value per name in the entry (every value stays in events.jsonl); `set` writes
any entry field by dotted path (objects are merged, tags added), except the identity and outcome fields
the recorder owns and the fields a person gave as options to `kb record`; `note` adds a paragraph to the
entry's body. Any language can write these lines, e.g. from a
shell: `echo '{"event":"metric","name":"loss","value":1.9}' >> "$KB_RUN_DIR/events.jsonl"`.

This module is the Python writer. It imports only the standard library, so a training node without kb
installed can copy it. Each event is one `write` of one line to a file opened for appending, which keeps
lines whole when several processes (ranks) write at once. Without KB_RUN_DIR every call does nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

ENV_RUN_DIR = "KB_RUN_DIR"
EVENTS = "events.jsonl"


def run_dir() -> Path | None:
    """The run folder named by KB_RUN_DIR, or None when nothing is recording."""
    named = os.environ.get(ENV_RUN_DIR)
    return Path(named) if named else None


def emit(event: dict[str, Any], folder: Path | None = None) -> bool:
    """Append one event; returns False when there is no run folder to write to."""
    folder = folder or run_dir()
    if folder is None:
        return False
    line = json.dumps({**event, "time": time.time()}, default=str, allow_nan=True) + "\n"
    fd = os.open(folder / EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    return True


def metric(
    name: str,
    value: float | None,
    unit: str | None = None,
    *,
    step: int | None = None,
    phase: str | None = None,
    better: str | None = None,
    per_rank: bool | None = None,
    folder: Path | None = None,
) -> bool:
    """A measured figure; `better` is 'higher' or 'lower' so comparisons know which way is good; `per_rank`
    says that under many ranks the figure is one rank's own."""
    fields = {"unit": unit, "step": step, "phase": phase, "better": better, "per_rank": per_rank}
    return emit(
        {"event": "metric", "name": name, "value": value, **{k: v for k, v in fields.items() if v is not None}}, folder
    )


def set_field(field: str, value: Any, folder: Path | None = None) -> bool:
    """Set an entry field by dotted path, e.g. set_field('timings.compile_s', 8.8)."""
    return emit({"event": "set", "field": field, "value": value}, folder)


def note(text: str, folder: Path | None = None) -> bool:
    return emit({"event": "note", "text": text}, folder)
