"""The entry model: typed front matter plus a Markdown body, parsed, validated and serialised losslessly."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import EntryError, Problem
from kb.model.upgrade import needs_steps, upgrade
from kb.model.validation import SCHEMA_VERSION, coerce_entry, entry_plan, validate

if TYPE_CHECKING:
    from kb.model import frontmatter

# The order kb writes fields in: identity first, then what ran, on what, how it went. Unknown fields follow.
FIELD_ORDER = (
    "schema", "id", "title", "kind", "status", "recorded", "author", "tags", "links", "provenance",
    "workload", "backend", "mode", "settings", "command", "recorder", "git", "versions", "hardware",
    "environment", "precision", "timings", "metrics", "compile", "fallbacks", "memory", "numerics", "ranks", "failure",
    "adaptations", "decision", "release", "attachments",
)  # fmt: skip


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(when: datetime) -> str:
    """ISO 8601 in UTC with a Z, to the second: the one time format entries use."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """The inverse of iso(): an entry's time as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ordered(data: dict[str, Any]) -> dict[str, Any]:
    known = {key: data[key] for key in FIELD_ORDER if key in data}
    return known | {key: value for key, value in data.items() if key not in known}


@dataclass
class Entry:
    """One piece of evidence. `data` is the typed front matter; `body` the Markdown text after it."""

    data: dict[str, Any]
    body: str = ""
    path: Path | None = None
    lines: frontmatter.Lines = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, path: Path | None = None) -> Entry:
        """Parse, upgrade from an older schema and validate a whole entry file; every problem raises an
        EntryError naming file and line."""
        from kb.model import frontmatter  # YAML: loaded by the commands that read an entry file, not by every one

        doc = frontmatter.load(text, path, entry_plan())  # typed as it is built: most entries are of this version
        data = doc.data
        if needs_steps(data):  # an older one: its upgrade steps see it as written, untyped
            doc = frontmatter.load(text, path)
            data = coerce_entry(upgrade(doc.data))
        check_version(data, path, doc.lines)
        validate(data, path, doc.lines)
        return cls(data=data, body=doc.body, path=path, lines=doc.lines)

    @classmethod
    def read(cls, path: Path, inside: Path | None = None) -> Entry:
        """The entry in a file; `inside` is the knowledge base a link may point into (kb.store.reading)."""
        from kb.store.reading import read_entry_bytes

        return cls.from_bytes(read_entry_bytes(path, inside), path)

    @classmethod
    def from_bytes(cls, data: bytes, path: Path | None = None) -> Entry:
        """Parse an entry file's bytes; bytes that are not UTF-8 are a problem on their line."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            message = f"not UTF-8 text (byte {exc.start}); save it as UTF-8"
            raise EntryError([Problem(path, line, None, message)]) from None
        return cls.parse(text, path)

    def serialise(self) -> str:
        from kb.model import frontmatter

        return frontmatter.render(ordered(self.data), self.body)

    def validate(self) -> None:
        validate(self.data, self.path, self.lines)

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def title(self) -> str:
        return self.data.get("title", "")

    @property
    def kind(self) -> str:
        return self.data.get("kind", "")

    @property
    def status(self) -> str | None:
        return self.data.get("status")

    @property
    def recorded(self) -> str:
        return self.data.get("recorded", "")

    def get(self, dotted: str, default: Any = None) -> Any:
        """A nested field by dotted path: entry.get('metrics.tokens_per_s.value')."""
        value: Any = self.data
        for part in dotted.split("."):
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value


def check_version(data: dict[str, Any], path: Path | None, lines: frontmatter.Lines) -> None:
    version = data.get("schema")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        line = lines.get(("schema",))
        message = (
            f"written by a newer kb (entry schema {version}, this kb reads up to {SCHEMA_VERSION}); "
            "upgrade kb to read it"
        )
        raise EntryError([Problem(path, line, "schema", message)])


def new_entry(entry_id: str, title: str, kind: str, **fields: Any) -> Entry:
    """A fresh entry with identity fields filled; `fields` adds sections (None values are left out)."""
    data: dict[str, Any] = {"schema": SCHEMA_VERSION, "id": entry_id, "title": title, "kind": kind}
    data["recorded"] = fields.pop("recorded", None) or iso(utc_now())
    data.update({key: value for key, value in fields.items() if value is not None})
    return Entry(data=ordered(data))


def entry_now(title: str, kind: str, **sections: Any) -> Entry:
    """A new entry recorded now, with a fresh id; unset values (None) are left out, also inside sections."""
    now = utc_now()
    fields = {
        name: {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value
        for name, value in sections.items()
        if value is not None
    }
    from kb.model.ids import new_id

    return new_entry(new_id(title, now), title, kind, recorded=iso(now), **fields)
