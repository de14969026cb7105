"""The entry schema: typing of plain YAML scalars by declared field type, and validation with lines.

The JSON Schema in `kb/schema/entry-v1.schema.json` is the one description of the format: editors
can use it to check front matter, and kb uses it both to decide what a plain scalar means and to
validate. A plain scalar becomes a number, boolean or null only where the field is declared so; in
fields of mixed or unknown type it does so only if writing the value back gives the same text, so
`2.10` stays the string "2.10" and `010` stays "010", while `0.5` and `8` are numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from datetime import date, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any

from kb.errors import EntryError, Problem
from kb.model.frontmatter import Lines, Plain, dotted

SCHEMA_VERSION = 1
_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}
_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z|[-+]?\.(inf|Inf|INF)\Z|\.(nan|NaN|NAN)\Z")


@cache
def entry_schema() -> dict[str, Any]:
    return json.loads(schema_path().read_text("utf-8"))


def clipped(text: str, most: int) -> str:
    """TEXT as a list or table shows it: whole when it fits, else its start and an ellipsis."""
    return text if len(text) <= most else text[: most - 1] + "…"


def schema_path() -> Path:
    """Where the schema file lies, for editors and for `kb schema`. Beside this module: kb is installed as
    files, never zipped (a wheel unpacks), and importlib.resources would cost every recording 0.015 s."""
    return Path(__file__).with_name("schemas") / f"entry-v{SCHEMA_VERSION}.schema.json"


def yaml_float_text(value: float) -> str:
    """The text YAML writes for a float (PyYAML's SafeRepresenter rule)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _to_float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)


def _typed(text: Plain, types: set[str]) -> Any:
    """The value of a plain scalar in a field of the given JSON types (empty set: unknown field)."""
    if "string" in types or not types:
        # Mixed or unknown: a non-string only if it writes back as the very same text.
        if text in _NULLS and (not types or "null" in types):
            return None
        if text in ("true", "false") and (not types or "boolean" in types):
            return text == "true"
        number = _int(text) if _INT.match(text) and (not types or types & {"integer", "number"}) else None
        if number is not None and str(number) == text:
            return number
        if _FLOAT.match(text) and (not types or "number" in types) and yaml_float_text(_to_float(text)) == text:
            return _to_float(text)
        return str(text)
    if "null" in types and text in _NULLS:
        return None
    if "boolean" in types and text in _TRUE | _FALSE:
        return text in _TRUE
    if types & {"integer", "number"} and _INT.match(text) and (number := _int(text)) is not None:
        return number
    if "number" in types and _FLOAT.match(text):
        return _to_float(text)
    return str(text)  # left for validation to report


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits): text, for validation
        return None


def _resolve(schema: dict[str, Any] | bool | None) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        return None
    while "$ref" in schema:
        ref = schema["$ref"]
        schema = entry_schema()["$defs"][ref.rsplit("/", 1)[-1]]
    return schema


def _types(schema: dict[str, Any] | None) -> set[str]:
    if schema is None:
        return set()
    if "type" in schema:
        declared = schema["type"]
        return {declared} if isinstance(declared, str) else set(declared)
    if "const" in schema:
        return {_json_type(schema["const"])}
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    if "anyOf" in schema:
        out: set[str] = set()
        for option in schema["anyOf"]:
            out |= _types(_resolve(option))
        return out
    return set()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _child(schema: dict[str, Any] | None, key: str | int) -> dict[str, Any] | None:
    if schema is None:
        return None
    if isinstance(key, int):
        return _resolve(schema.get("items"))
    props = schema.get("properties", {})
    if key in props:
        return _resolve(props[key])
    return _resolve(schema.get("additionalProperties"))


def _object_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """For anyOf fields holding an object in one option, that option."""
    if schema is not None and "anyOf" in schema and "properties" not in schema:
        for option in schema["anyOf"]:
            resolved = _resolve(option)
            if resolved and (resolved.get("type") == "object" or resolved.get("type") == "array"):
                return resolved
    return schema


class _Plan:
    """What typing and the calendar check need of one schema node, worked out once per node instead of once per
    value: indexing reads every entry, and walking the schema took as long as reading the YAML."""

    __slots__ = ("_additional", "_dated", "_items", "_properties", "object", "schema", "typed", "types")

    def __init__(self, schema: dict[str, Any] | None) -> None:
        self.schema = schema
        self.types = frozenset(_types(schema))
        # The value of a plain scalar here (kb.model.frontmatter.Typing). In a field of text alone, the text: most
        # fields are, and each of them took a call of _typed with its pattern matches.
        self.typed: Callable[[str], Any] = str if self.types == {"string"} else partial(_typed, types=self.types)
        self.object = _object_schema(schema)
        self._properties: dict[str, _Plan] = {}
        self._additional: _Plan | None = None
        self._items: _Plan | None = None
        self._dated: bool | None = None

    def child(self, key: str | int) -> _Plan:
        """The plan of a key's value (any index of a list: its items)."""
        if isinstance(key, int):
            if self._items is None:
                self._items = _Plan(_child(self.object, key))
            return self._items
        plan = self._properties.get(key)
        if plan is None and self.object is not None and key in self.object.get("properties", {}):
            plan = self._properties[key] = _Plan(_child(self.object, key))
        if plan is None:
            if self._additional is None:
                self._additional = _Plan(_child(self.object, key))
            plan = self._additional
        return plan

    def when(self) -> str | None:
        """ "time" or "date" when a text here must name a real moment or day."""
        if self.schema is None:
            return None
        if self.schema is entry_schema()["$defs"]["time"]:
            return "time"
        return "date" if self.schema.get("pattern") == _DATE_PATTERN else None

    def dated(self) -> bool:
        """Whether a time or a date may lie here or below (a value with none is not walked by the calendar check)."""
        if self._dated is None:
            self._dated = True  # while it is worked out: a schema that refers to itself is walked
            below = []
            if self.object is not None:  # each property, the items of a list, the values of other keys
                below = [*map(self.child, self.object.get("properties") or {}), self.child(0), self.child("")]
            self._dated = self.when() is not None or any(plan.dated() for plan in below)
        return self._dated


def coerce(value: Any, schema: dict[str, Any] | None = None) -> Any:
    """Replace every Plain scalar by the value its field's declared type gives it."""
    return _coerce(value, _Plan(schema))


def _coerce(value: Any, plan: _Plan) -> Any:
    if isinstance(value, dict):
        return {k: _coerce(v, plan.child(k)) for k, v in value.items()}
    if isinstance(value, list):
        items = plan.child(0)
        return [_coerce(v, items) for v in value]
    if isinstance(value, Plain):
        return plan.typed(value)
    return value


@cache
def entry_plan() -> _Plan:
    """The typing of an entry's front matter by the current schema, for kb.model.frontmatter.load."""
    return _Plan(entry_schema())


def coerce_entry(data: dict[str, Any]) -> dict[str, Any]:
    return _coerce(data, entry_plan())


@cache
def _fast_validator() -> Any:
    """fastjsonschema turns the schema into Python code: about ten times faster per entry than jsonschema and
    far quicker to import, which matters for every `kb record` and for indexing large knowledge bases. Making the
    code takes longer than a short command, so it is kept in the user's cache folder and imported from there."""
    import importlib.util  # this, and shlex below, only where an entry is validated: most commands never do
    import zlib  # a checksum names the file: hashlib's import was a fortieth of every recording's start

    import fastjsonschema
    from fastjsonschema.ref_resolver import RefResolver

    schema = entry_schema()
    key = (json.dumps(schema, sort_keys=True) + fastjsonschema.VERSION + "named-f").encode()  # `validate`, f-strings
    digest = f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}"
    path = _cache_folder() / f"entry_v{SCHEMA_VERSION}_{digest}.py"
    try:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            # The generated function is named after the schema's $id: `validate` names it for the import below.
            entry_point = RefResolver.from_schema(schema).get_scope_name()
            code = f"{_without_locals(fastjsonschema.compile_to_code(schema))}\n\nvalidate = {entry_point}\n"
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(code, "utf-8")
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(f"kb_entry_validator_{digest}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.validate
    except (OSError, SyntaxError, AttributeError):  # no writable cache, or a damaged file: build it in memory
        return fastjsonschema.compile(schema)


# fastjsonschema names the value it checks with '"...{data__x}...".format(**locals())', even when it is valid:
# locals() copies every local of the large validating function, a third of the time it takes.
_FORMAT_LOCALS = re.compile(r'"((?:[^"\\]|\\.)*)"\.format\(\*\*locals\(\)\)')


def _without_locals(code: str) -> str:
    """The same code with each such string as an f-string, which reads only the names it holds."""
    return _FORMAT_LOCALS.sub(r'f"\1"', code)


def _cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kb" / "validators"


@cache
def _full_validator() -> Any:
    # fastjsonschema stops at the first violation; jsonschema lists them all, so a broken entry is fixed in one go.
    import jsonschema

    return jsonschema.Draft202012Validator(entry_schema())


def problems(data: dict[str, Any], path: Path | str | None = None, lines: Lines | None = None) -> list[Problem]:
    """Every schema violation in typed front matter, each with its file, line and field."""
    import fastjsonschema

    try:
        _fast_validator()(data)
        return _calendar_problems(data, path, lines or {}) + _command_problems(data, path, lines or {})
    except fastjsonschema.JsonSchemaException as first:
        found = _all_problems(data, path, lines or {})
        if found:
            return found
        # The two validators can disagree (Python's `$` in a pattern lets a final line break through
        # jsonschema): report the fast one's verdict at its field's line.
        where = tuple(getattr(first, "path", ())[1:])  # the path starts with fastjsonschema's "data"
        message = first.message.removeprefix(getattr(first, "name", "") or "").strip()
        return [Problem(path, _line_of(where, lines or {}), dotted(where) or None, message)]


_DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _calendar_problems(data: dict[str, Any], path: Path | str | None, lines: Lines) -> list[Problem]:
    """The times and dates that have the right digits but name no real moment (`2026-02-30`, `99:99:99`):
    a pattern cannot tell, and every later use of the value (sorting, durations) would fail on it."""
    found = []

    def walk(value: Any, plan: _Plan, where: tuple) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                child = plan.child(key)
                if child.dated():
                    walk(item, child, (*where, key))
        elif isinstance(value, list):
            child = plan.child(0)
            if child.dated():
                for index, item in enumerate(value):
                    walk(item, child, (*where, index))
        elif isinstance(value, str) and (what := plan.when()):
            try:
                if what == "time":
                    datetime.fromisoformat(value.replace("Z", "+00:00"))
                else:
                    date.fromisoformat(value)
            except ValueError:
                message = f"{_shown(value)} is not a real {'date and time' if what == 'time' else 'date'}"
                found.append(Problem(path, _line_of(where, lines), dotted(where), message))

    walk(data, entry_plan(), ())
    return found


def _command_problems(data: dict[str, Any], path: Path | str | None, lines: Lines) -> list[Problem]:
    """`command.line` is what people read and `command.argv` what `kb rerun` runs: they must say the same."""
    command = data.get("command")
    if not isinstance(command, dict) or not isinstance(command.get("argv"), list) or "line" not in command:
        return []
    import shlex

    if command["line"] == shlex.join(command["argv"]):
        return []
    runs = shlex.join(command["argv"])
    runs = runs if len(runs) <= 200 else runs[:197] + "..."
    message = f"differs from command.argv, which is what kb rerun runs: {runs}"
    return [Problem(path, _line_of(("command", "line"), lines), "command.line", message)]


def _all_problems(data: dict[str, Any], path: Path | str | None, lines: Lines) -> list[Problem]:
    found = []
    for error in sorted(_full_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = tuple(error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else ""
            field = dotted((*where, missing))
            message = "is required but missing"
        else:
            field = dotted(where) or None
            message = _explain(error)
        found.append(Problem(path, _line_of(where, lines), field, message))
    return found


def _explain(error: Any) -> str:
    found = _shown(error.instance)
    if error.validator == "enum":
        return f"{found} is not one of: {', '.join(map(str, error.validator_value))}"
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        hint = " (quote it to keep it as text)" if expected == "string" else ""
        return f"expected {expected}, found {found}{hint}"
    if error.validator == "pattern":
        if error.schema.get("description"):
            return f"{found} is not valid: {error.schema['description']}"
        return f"{found} does not have the expected form ({error.validator_value})"
    if error.validator == "maxLength":
        # Lists, facets and tables show these fields on every page: the fix is a shorter value, the rest in the body.
        return (
            f"{len(error.instance):,} characters, over the {error.validator_value:,} it may have; "
            "shorten it and keep the whole text in the entry's body"
        )
    if error.validator == "maxItems":
        # Each tag is a page and a filter of the site: thousands of them are no way to find anything.
        return (
            f"{len(error.instance):,} items, over the {error.validator_value:,} it may have; keep those that find "
            "the entry, and say the rest in its body"
        )
    if error.validator == "const":
        return f"must be {error.validator_value!r}, found {found}"
    return error.message


def _shown(value: Any, most: int = 80) -> str:
    """A refused value as quoted in a message: whole when short, else its start (a value can be megabytes)."""
    text = repr(value)
    return text if len(text) <= most else f"{text[: most - 3]}..."


def _line_of(where: tuple, lines: Lines) -> int | None:
    """The line of the field, else of its nearest parent; the opening fence (line 1) for the root."""
    while where:
        if where in lines:
            return lines[where]
        where = where[:-1]
    return 1 if lines else None


def validate(data: dict[str, Any], path: Path | str | None = None, lines: Lines | None = None) -> None:
    found = problems(data, path, lines)
    if found:
        raise EntryError(found)
