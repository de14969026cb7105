"""An entry as index rows: one for `entries`, and its rows for the normalised tables."""

from __future__ import annotations

import json
from typing import Any

from kb.entry import Entry

CHILD_TABLES = ("tags", "settings", "versions", "metrics", "timings", "failures", "links", "accelerators")


def entry_row(entry: Entry, path: str) -> dict[str, Any]:
    get = entry.get
    return {
        "id": entry.id,
        "path": path,
        "title": entry.title,
        "kind": entry.kind,
        "status": entry.status,
        "recorded": entry.recorded,
        "author": get("author"),
        "backend": get("backend"),
        "mode": get("mode"),
        "workload": get("workload.name"),
        "task": get("workload.task"),
        "model": get("workload.model"),
        "source": get("provenance.source"),
        "host": get("hardware.hostname"),
        "failure_class": get("failure.class"),
        "wall_s": _number(get("timings.wall_s")),
        "compile_s": _number(get("timings.compile_s")),
        "first_step_s": _number(get("timings.first_step_s")),
        "step_s_median": _number(get("timings.step_s.median")),
        "git_commit": get("git.commit"),
        "front_matter": json.dumps(entry.data, ensure_ascii=False, default=str),
    }


def child_rows(entry: Entry) -> dict[str, list[dict[str, Any]]]:
    data, entry_id = entry.data, entry.id
    rows: dict[str, list[dict[str, Any]]] = {table: [] for table in CHILD_TABLES}
    rows["tags"] = [{"entry_id": entry_id, "tag": tag} for tag in data.get("tags") or []]
    for name, value in (data.get("settings") or {}).items():
        rows["settings"].append(
            {
                "entry_id": entry_id,
                "name": name,
                "value": None if value is None else str(value),
                "number": _number(value),
            }
        )
    rows["versions"] = [
        {"entry_id": entry_id, "package": normalise_package(name), "version": version}
        for name, version in (data.get("versions") or {}).items()
    ]
    for name, metric in (data.get("metrics") or {}).items():
        if isinstance(metric, dict):
            rows["metrics"].append(
                {
                    "entry_id": entry_id,
                    "name": name,
                    "value": _number(metric.get("value")),
                    "unit": metric.get("unit"),
                    "phase": metric.get("phase"),
                    "better": metric.get("better"),
                }
            )
    for name, value in (data.get("timings") or {}).items():
        seconds = value.get("median") if isinstance(value, dict) else value
        if _number(seconds) is not None:
            rows["timings"].append({"entry_id": entry_id, "name": name, "seconds": _number(seconds)})
    failure = data.get("failure")
    if isinstance(failure, dict) and failure:
        rows["failures"].append(
            {
                "entry_id": entry_id,
                "class": failure.get("class"),
                "message": failure.get("message"),
                "explanation": failure.get("explanation"),
                "phase": failure.get("phase"),
                "assigned": failure.get("assigned"),
            }
        )
    for role, targets in (data.get("links") or {}).items():
        for target in [targets] if isinstance(targets, str) else targets or []:
            rows["links"].append({"entry_id": entry_id, "role": role, "target": target})
    for accelerator in (data.get("hardware") or {}).get("accelerators") or []:
        if isinstance(accelerator, dict):
            rows["accelerators"].append(
                {
                    "entry_id": entry_id,
                    "vendor": accelerator.get("vendor"),
                    "name": accelerator.get("name"),
                    "count": accelerator.get("count"),
                    "memory_gb": _number(accelerator.get("memory_gb")),
                }
            )
    return rows


def normalise_package(name: str) -> str:
    """Distribution names compare as pip compares them: case and -/_/. do not matter."""
    return name.lower().replace("_", "-").replace(".", "-")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
