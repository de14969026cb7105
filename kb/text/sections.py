"""An entry's front-matter sections as labelled rows of text, for the terminal and the site alike."""

from __future__ import annotations

from typing import Any

# Sections shown as tables of fields, in reading order; the rest of the front matter follows under "More".
SECTIONS = (
    ("report", "Reported"), ("coverage", "Coverage"), ("workload", "Workload"), ("settings", "Settings"),
    ("command", "Command"), ("timings", "Timings"), ("metrics", "Metrics"), ("failure", "Failure"),
    ("profile", "Profile"), ("compile", "Compile"), ("fallbacks", "Fallbacks"), ("memory", "Memory"),
    ("numerics", "Numerics"), ("ranks", "Ranks"), ("decision", "Decision"), ("release", "Release"),
    ("precision", "Precision"), ("versions", "Versions"), ("hardware", "Hardware"), ("git", "Git"),
    ("environment", "Environment"), ("links", "Links"), ("provenance", "Provenance"), ("attachments", "Attachments"),
)  # fmt: skip
IDENTITY = {"schema", "id", "title", "kind", "status", "recorded", "author", "tags", "backend", "mode", "recorder"}


def flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A section as (label, text) rows: nested maps as dotted names, metrics and records on one line each."""
    if prefix == "" and isinstance(value, list) and all(isinstance(v, dict) and "path" in v for v in value):
        return [
            (
                item["path"],
                " ".join(str(item[k]) for k in ("role", "bytes") if item.get(k) is not None)
                + (" bytes" if item.get("bytes") is not None else ""),
            )
            for item in value
        ]  # attachments
    if isinstance(value, dict):
        if set(value) <= {"value", "unit", "phase", "better", "step"} and "value" in value and prefix:
            return [(prefix, metric_text(value))]
        rows = []
        for key, item in value.items():
            rows += flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            words = [str(item) for item in value]
            # Words (argv, tags) read with spaces between; phrases (caveats, triggers) need a clearer mark.
            return [(prefix, ("; " if any(" " in word for word in words) else " ").join(words))]
        if all(
            isinstance(item, dict) and not any(isinstance(v, (dict, list)) for v in item.values()) for item in value
        ):
            # A list of records (compile frames, per-rank figures): one line each, unknown values left out.
            return [
                (f"{prefix}[{index}]", "  ".join(f"{k} {v}" for k, v in item.items() if v is not None))
                for index, item in enumerate(value)
            ]
        rows = []
        for index, item in enumerate(value):
            rows += flatten(item, f"{prefix}[{index}]")
        return rows
    return [(prefix or "-", "-" if value is None else str(value))]


def metric_text(metric: dict[str, Any]) -> str:
    text = "-" if metric["value"] is None else f"{metric['value']:g}"
    extras = [metric[key] for key in ("unit",) if metric.get(key)]
    extras += [f"{key} {metric[key]}" for key in ("phase", "step", "better") if metric.get(key) is not None]
    return " ".join([text, *map(str, extras)])
