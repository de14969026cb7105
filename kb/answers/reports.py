"""Reported results: figures someone else published, typed in with their source and caveats (kind report).

They stand beside measured runs (`kb compare` puts them side by side) but are never mistaken for them:
`provenance.source` is `reported`, and every list, view and page marks them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from kb.errors import KbError
from kb.model.entry import Entry, entry_now
from kb.secrets.redact import redact_text

_HARDWARE = re.compile(r"(?:(?P<count>\d{1,9})\s*x\s*)?(?P<name>\S.*)\Z")
# The text a person types in; people paste from anywhere, so each is masked like any log.
_TYPED = (
    "title", "publisher", "measured", "url", "reported_by", "workload", "model", "backend", "mode", "hardware", "note",
)  # fmt: skip


@dataclass
class Report:
    title: str
    publisher: str
    date: date | None  # None: the source gives no date
    measured: str  # what was measured, in the reporter's terms
    url: str | None = None
    reported_by: str | None = None  # who typed it in
    workload: str | None = None
    model: str | None = None
    backend: str | None = None
    mode: str | None = None
    hardware: str | None = None  # "16x Trainium2"
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    note: str | None = None

    def __post_init__(self) -> None:
        # Masked as it is given, before anything uses it: the title becomes the entry's id and file name.
        for name in _TYPED:
            value = getattr(self, name)
            if value:
                setattr(self, name, redact_text(value))
        self.versions = {package: redact_text(version) for package, version in self.versions.items()}
        self.caveats = [redact_text(caveat) for caveat in self.caveats]
        self.tags = [redact_text(tag) for tag in self.tags]


def new_report(kb: Any, report: Report) -> Entry:
    """Write a report entry; the source is required, so that every reported figure says where it is from."""
    if report.url and not re.match(r"https?://", report.url):
        raise KbError(f"--url {report.url!r}: expected an http(s) address of the source")
    entry = entry_now(
        report.title,
        "report",
        author=report.reported_by,
        tags=sorted(set(report.tags)) or None,
        provenance={
            "source": "reported",
            "tool": "kb add",
            "publisher": report.publisher,
            "url": report.url,
            "date": report.date.isoformat() if report.date else "unknown",
            "reported_by": report.reported_by,
        },
        workload={"name": report.workload, "model": report.model} if report.workload or report.model else None,
        backend=report.backend,
        mode=report.mode,
        settings=report.settings or None,
        versions=report.versions or None,
        hardware={"accelerators": [accelerator(report.hardware)]} if report.hardware else None,
        metrics=report.metrics or None,
        report={"measured": report.measured, "caveats": report.caveats or None},
    )
    entry.body = _body(report)
    return kb.create(entry)


def accelerator(text: str) -> dict[str, Any]:
    """`16x Trainium2` -> {name: Trainium2, count: 16}; a plain name counts one."""
    match = _HARDWARE.match(text.strip())
    if match is None:
        raise KbError(f"--hardware {text!r}: expected e.g. '16x Trainium2' or 'H100'")
    return {"name": match["name"].strip(), "count": int(match["count"] or 1)}


def _body(report: Report) -> str:
    source = f"[{report.publisher}]({report.url})" if report.url else report.publisher
    when = f" on {report.date.isoformat()}" if report.date else ""
    lines = [f"Reported by {source}{when}: {report.measured}", ""]
    if report.caveats:
        lines += ["## Caveats", "", *(f"- {caveat}" for caveat in report.caveats), ""]
    if report.note and report.note.strip():
        lines += ["## Notes", "", report.note.strip(), ""]
    return "\n".join(lines)
