"""Read a run folder (the hand-over format of ingest.handover) into an entry.

A run folder holds `events.jsonl` (appended by the run), optionally `run.json` (what a run recorded about
itself when no `kb record` was around: command, times, status, environment), and any files the run
wrote. Reading is forgiving: a bad line is skipped and reported by line number, a torn last line (the
writer was killed mid-write) is expected, and nothing a run writes can overwrite the entry's identity.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.describe import RunInfo, identity_title
from ingest.handover import EVENTS
from kb.errors import KbError
from kb.model.entry import Entry
from kb.model.validation import problems as schema_problems

MANIFEST = "run.json"
# Fields the recorder owns: a run reports what happened, the recorder decides who it is and how it ended.
PROTECTED = frozenset({"schema", "id", "kind", "recorded", "recorder", "status", "attachments", "provenance"})
# provenance.given: the fields a person gave as options to kb record; what the run hands over never replaces them.
GIVEN = "given"


def given_fields(info: RunInfo) -> list[str]:
    """The fields a person stated as options (dotted paths; tags add up rather than replace, so are not listed)."""
    named = [name for name in ("title", "workload", "backend", "mode", "author") if getattr(info, name)]
    return (
        named
        + [f"settings.{key}" for key in info.settings]
        + [f"metrics.{name}" for name in info.metrics]
        + (["links"] if info.reference or info.rerun_of else [])
    )


@dataclass
class Folded:
    """What reading a run folder's events gave: counts, paragraphs for the body, and lines skipped."""

    applied: int = 0
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def fold_events(entry: Entry, folder: Path) -> Folded:
    """Apply every event in folder/events.jsonl to the entry, in order; a field given as an option keeps its value."""
    folded = Folded()
    given = (entry.data.get("provenance") or {}).get(GIVEN) or []
    named_before = _identity(entry.data)
    path = folder / EVENTS
    if not path.is_file():
        return folded
    with open(path, "rb") as handle:
        raw_lines = handle.read().split(b"\n")
    torn = raw_lines[-1] != b""
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        where = f"{EVENTS}:{number}"
        try:
            event = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            last = number == len(raw_lines) and torn
            folded.skipped.append(f"{where}: {'incomplete last line (the writer stopped mid-line)' if last else exc}")
            continue
        problem = _apply(entry, event, folded, given)
        if problem:
            folded.skipped.append(f"{where}: {problem}")
        else:
            folded.applied += 1
    if "title" not in given:
        _retitle(entry, named_before)
    return folded


def _identity(data: dict[str, Any]) -> tuple[Any, ...]:
    workload = data.get("workload")
    return (
        data.get("title"),
        workload.get("name") if isinstance(workload, dict) else None,
        data.get("backend"),
        data.get("mode"),
    )


def _retitle(entry: Entry, before: tuple[Any, ...]) -> None:
    """A run that named itself (its title, else its workload, backend and mode) names its entry, unless a person did."""
    now = _identity(entry.data)
    if now[0] != before[0] or now[1:] == before[1:]:
        return  # the run set its own title, or said nothing new about who it is
    title = identity_title(*now[1:])
    if title:
        entry.data["title"] = title


def _apply(entry: Entry, event: Any, folded: Folded, given: list[str]) -> str | None:
    """Apply one event; returns why it was skipped, or None."""
    if not isinstance(event, dict):
        return "not a JSON object"
    kind = event.get("event")
    if kind == "metric":
        return _apply_metric(entry, event, given)
    if kind == "set":
        return _apply_set(entry, event.get("field"), event.get("value"), given)
    if kind == "note":
        text = event.get("text")
        if not isinstance(text, str) or not text.strip():
            return "a note needs non-empty 'text'"
        folded.notes.append(text.strip())
        return None
    return f"unknown event {kind!r}; known events: metric, set, note"


def _apply_metric(entry: Entry, event: dict[str, Any], given: list[str]) -> str | None:
    name, value = event.get("name"), event.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"metric {name!r}: value must be a number, found {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        value = None if math.isnan(value) else value
    metric = {"value": value} | {
        k: event[k] for k in ("unit", "phase", "better", "step", "per_rank") if event.get(k) is not None
    }
    return _apply_set(
        entry, f"metrics.{name}" if isinstance(name, str) and "." not in name else None, metric, given, replace=True
    )


def _apply_set(entry: Entry, dotted: Any, value: Any, given: list[str], replace: bool = False) -> str | None:
    if not isinstance(dotted, str) or not dotted or any(not part for part in dotted.split(".")):
        return f"'field' must be a dotted field name such as timings.compile_s, found {dotted!r}"
    parts = dotted.split(".")
    if parts[0] in PROTECTED:
        return f"field {parts[0]!r} is set by the recorder, not by the run"
    data = copy.deepcopy(entry.data)
    target = data
    for part in parts[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    last = parts[-1]
    if not replace and isinstance(value, dict) and isinstance(target.get(last), dict):
        target[last] = _merged(target[last], value)
    elif dotted == "tags" and isinstance(value, list) and isinstance(target.get(last), list):
        target[last] = sorted({*target[last], *value}, key=str)  # the run's tags join the person's
    else:
        target[last] = value
    for path in given:  # set inside the field, or the field inside what was set: the person's value stays
        if path == dotted or path.startswith(f"{dotted}.") or dotted.startswith(f"{path}."):
            _restore(data, entry.data, path.split("."))
    found = schema_problems(data)
    if found:
        return "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in found)
    entry.data = data
    return None


def _restore(data: dict[str, Any], original: dict[str, Any], parts: list[str]) -> None:
    """Put back the value `original` holds at this path (or its absence) in `data`."""
    for part in parts[:-1]:
        original = original.get(part) if isinstance(original, dict) else None
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    if isinstance(original, dict) and parts[-1] in original:
        data[parts[-1]] = copy.deepcopy(original[parts[-1]])
    else:
        data.pop(parts[-1], None)


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out = dict(old)
    for key, value in new.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def read_manifest(folder: Path) -> dict[str, Any]:
    """The run's own record of itself (run.json), or {} when it wrote none."""
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KbError(f"{path}: not valid JSON ({exc}); fix or remove it and import again") from None
    if not isinstance(data, dict):
        raise KbError(f"{path}: expected a JSON object of entry fields")
    return data


def check_folder(folder: Path) -> Path:
    if not folder.is_dir():
        raise KbError(f"{folder}: no such run folder; give the folder a run wrote (it holds {EVENTS} or {MANIFEST})")
    if not (folder / EVENTS).is_file() and not (folder / MANIFEST).is_file():
        raise KbError(f"{folder}: not a run folder (neither {EVENTS} nor {MANIFEST} is in it)")
    return folder
