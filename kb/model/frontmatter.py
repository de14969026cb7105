"""Split a Markdown file into YAML front matter and body, load the YAML without guessing, dump it back.

PyYAML's default loaders follow YAML 1.1: `2.10` becomes the float 2.1, `no` becomes False, `010`
becomes 8 and dates become date objects. Evidence about software versions cannot survive that, so the
front matter is composed into nodes and built here: quoted scalars are strings, and plain scalars are
kept as `Plain` strings that the schema (kb.model.validation) turns into numbers, booleans or nulls only where a
field is declared as such; given the schema's `Typing`, the builder does that as it goes. Every key's line
is kept so that errors can point at it.
PyYAML is imported only to load or dump a file: the schema and most commands need only `Plain` and `dotted`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kb.errors import LONE_SURROGATE, EntryError, Problem

if TYPE_CHECKING:
    import yaml

FENCE = "---"
# Past this many nodes a document is not an entry but an attack (or an accident).
MAX_NODES = 200_000
# Entries nest a few levels; past this many a document is refused before anything recurses through it.
MAX_DEPTH = 64


class Plain(str):
    """A scalar written without quotes: its type is decided by the schema, not by YAML 1.1 guessing."""

    __slots__ = ()


# A key's location: the tuple of keys and list indexes from the root, mapped to a 1-based line.
Lines = dict[tuple, int]


class Typing(Protocol):
    """What a plain scalar means at one place in the front matter (kb.model.validation's plan of a schema node)."""

    def child(self, key: str | int) -> Typing:
        """The typing of a key's value (any index of a list: its items)."""

    def typed(self, text: str) -> Any:
        """The value of a plain scalar here."""


class _Untyped:
    """Every plain scalar kept as `Plain`, for the schema to type later (an older entry's upgrade steps see it so)."""

    def child(self, key: str | int) -> _Untyped:
        return self

    def typed(self, text: str) -> Plain:
        return Plain(text)


UNTYPED = _Untyped()


@dataclass
class Document:
    """The parts of an entry file: raw front matter data, its line map, and the Markdown body."""

    data: dict[str, Any]
    body: str
    lines: Lines = field(default_factory=dict)
    body_line: int = 1  # the file line on which the body starts


# A line that closes the front matter; trailing blanks on a fence are invisible, so they are accepted.
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t\r]*$", re.MULTILINE)


def split(text: str, path: Path | str | None = None) -> tuple[str, str, int]:
    """Return (front matter text, body, body's first line) or raise an EntryError naming the line."""
    if text.startswith("\ufeff"):
        text = text[1:]
    opened = text.find("\n") + 1 or len(text)
    if text[:opened].rstrip(" \t\r\n") != FENCE:
        raise EntryError([Problem(path, 1, None, "an entry starts with a line '---' that opens its YAML front matter")])
    closing = _CLOSING.search(text, opened) if opened < len(text) else None
    if closing is None:
        raise EntryError([Problem(path, 1, None, "the front matter opened on line 1 is never closed by a line '---'")])
    # With the line break that ends its last line: a block scalar there ("x: |" and "0") keeps its own.
    front = text[opened : closing.start()]
    body = text[closing.end() + 1 :]  # after the closing line's break, if it has one
    return front, body, front.count("\n") + 3


def load(text: str, path: Path | str | None = None, typing: Typing = UNTYPED) -> Document:
    """Parse a whole entry file into a Document, its plain scalars typed by `typing` as it is built (in the same walk:
    typing them in a second one took as long as the building); YAML errors become EntryErrors with their line."""
    import yaml

    front, body, body_line = split(text, path)
    try:
        node = yaml.compose(front, Loader=_loader())
    except yaml.MarkedYAMLError as exc:
        # Where what is unclosed began (a `[`, a quote), else where the parser gave up.
        mark = exc.context_mark or exc.problem_mark
        line = mark.line + 2 if mark else None  # +1 for 1-based, +1 for the opening fence
        context = f" ({exc.context} begun on this line)" if exc.context_mark and exc.context else ""
        message = f"front matter is not valid YAML: {exc.problem or exc}{context}"
        raise EntryError([Problem(path, line, None, " ".join(message.split()))]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses (NUL, other control characters)
        line = front[: exc.position].count("\n") + 2
        message = f"front matter holds the control character #x{exc.character:04x}, which YAML does not allow"
        raise EntryError([Problem(path, line, None, message)]) from None
    except yaml.YAMLError as exc:
        raise EntryError([Problem(path, None, None, f"front matter is not valid YAML: {exc}")]) from None
    if node is None:
        raise EntryError(
            [Problem(path, 2, None, "the front matter is empty; an entry needs at least schema, id, kind and title")]
        )
    builder = _Builder(path, anchored="&" in front)
    data = builder.build(node, (), typing)
    if not isinstance(data, dict):
        raise EntryError([Problem(path, 2, None, "the front matter must be a mapping of field: value lines")])
    return Document(data=data, body=body, lines=builder.lines, body_line=body_line)


@cache
def _loader() -> type:
    """libyaml's composer without tag resolution: the builder ignores tags, and resolving them in Python was a
    quarter of the composing."""
    import yaml

    class Loader(getattr(yaml, "CBaseLoader", yaml.BaseLoader)):
        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            return ""

        def descend_resolver(self, parent: Any, index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

    return Loader


class _Builder:
    """Turn composed YAML nodes into dicts, lists and typed scalars, recording the line of every key.

    An alias is a node met twice; refusing aliases rules out exponential expansion and cycles. Only a document with
    an anchor (`&`) can hold one, so only such a document has each node it meets remembered, and the scalars of the
    others (most values) are built in their mapping's or list's loop, without a call of their own: the two were a
    third of the building."""

    def __init__(self, path: Path | str | None, anchored: bool):
        import yaml

        self.mapping, self.sequence, self.scalar = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
        self.path = path
        self.anchored = anchored
        self.lines: Lines = {}
        self.seen: set[int] = set()
        self.values = 0

    def build(self, node: yaml.Node, where: tuple, typing: Typing) -> Any:
        if self.anchored:
            if id(node) in self.seen:
                message = "YAML anchors and aliases are not supported in entries; write the value out"
                raise self._error(node, where, message)
            self.seen.add(id(node))
        scalar = self.scalar
        kind = type(node)
        if kind is scalar:
            # Explicit tags are ignored: nothing is ever constructed from a tag, the text is the value.
            return node.value if node.style else typing.typed(node.value)
        if len(where) > MAX_DEPTH:
            message = f"values are nested more than {MAX_DEPTH} levels deep; flatten them"
            raise EntryError([Problem(self.path, node.start_mark.line + 2, dotted(where[:1]), message)])
        self.values += len(node.value)
        if self.values > MAX_NODES:
            message = f"the front matter has more than {MAX_NODES} values; move bulk data to an attachment"
            raise self._error(node, where, message)
        lines, inline = self.lines, not self.anchored
        if kind is self.mapping:
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not scalar:
                    raise self._error(key_node, where, "mapping keys must be plain names")
                key = str(key_node.value)
                at = (*where, key)
                if key in out:
                    message = f"the field '{key}' appears twice; keep one"
                    raise EntryError([Problem(self.path, key_node.start_mark.line + 2, dotted(at), message)])
                lines[at] = key_node.start_mark.line + 2
                if inline and type(value_node) is scalar:
                    out[key] = value_node.value if value_node.style else typing.child(key).typed(value_node.value)
                else:
                    out[key] = self.build(value_node, at, typing.child(key))
            return out
        items = []
        typing = typing.child(0)
        for index, item in enumerate(node.value):
            at = (*where, index)
            lines[at] = item.start_mark.line + 2
            if inline and type(item) is scalar:
                items.append(item.value if item.style else typing.typed(item.value))
            else:
                items.append(self.build(item, at, typing))
        return items

    def _error(self, node: yaml.Node, where: tuple, message: str) -> EntryError:
        line = self.lines.get(where, node.start_mark.line + 2)  # an alias's own mark is its anchor's
        return EntryError([Problem(self.path, line, dotted(where) or None, message)])


def dotted(where: tuple) -> str:
    """Render a location tuple like ('metrics', 'loss', 'value') or ('tags', 0) as metrics.loss.value / tags[0]."""
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@cache
def _dumper() -> type:
    """Block style, text in literal blocks when it has several lines, keys in the order given."""
    import yaml

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
        pass

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        if "\n" in value and _literal_safe(value):
            return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
        return dumper.represent_str(value)

    Dumper.add_representer(str, represent_str)
    Dumper.add_representer(Plain, represent_str)
    return Dumper


def _literal_safe(value: str) -> bool:
    # Literal blocks cannot keep trailing spaces on lines, tabs after indentation or control characters
    # exactly; such text falls back to a quoted scalar, which is always lossless.
    return not re.search(
        r"[ \t]\n|[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029\ufeff]|^\s|\r", value
    ) and not value.endswith(" ")


def dump(data: dict[str, Any]) -> str:
    """Serialise front matter data canonically: the same data always gives the same text."""
    import yaml

    try:
        return yaml.dump(
            data, Dumper=_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
        )
    except UnicodeEncodeError:  # only a lone surrogate fails to encode as UTF-8
        raise EntryError([Problem(None, None, dotted(_surrogate_at(data, ())) or None, _NOT_UTF8)]) from None


def render(data: dict[str, Any], body: str) -> str:
    """A whole entry file: fence, front matter, fence, body."""
    if not body.isascii() and LONE_SURROGATE.search(body):
        message = "the notes hold bytes that are not UTF-8 text (typed in another encoding?); give them as UTF-8"
        raise EntryError([Problem(None, None, None, message)])
    return f"{FENCE}\n{dump(data)}{FENCE}\n{body}"


_NOT_UTF8 = "holds bytes that are not UTF-8 text (typed in another encoding?); give the text as UTF-8"


def _surrogate_at(value: Any, where: tuple) -> tuple:
    """The location of the first string (key or value) holding a lone surrogate; () when there is none."""
    if isinstance(value, str):
        return where if LONE_SURROGATE.search(value) else ()
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and LONE_SURROGATE.search(key):
            return (*where, key)
        found = _surrogate_at(item, (*where, key))
        if found:
            return found
    return ()
