"""Entry data as the index stores it, read back exactly as it was written: the front matter zlib-packed (`packed`,
read in Python only), and the board's facts and the settings' values as JSON that every SQLite accepts (`dumps`).

An entry may hold NaN or infinity (a diverged loss, a `run.json` from `json.dump`, `.nan` in YAML); Python writes
them as `NaN` and `Infinity`, which are not JSON, and SQLite's JSON functions refuse the whole document (newer
SQLite reads them as JSON5 but turns NaN into null, and older SQLite writes an infinity it extracted as `Inf`, which
it then refuses too). So each is written as a marked string ("\ufdd0NaN", "\ufdd0Infinity", "\ufdd0-Infinity")
that `loads` turns back into the float, and that no SQL comparison or sum takes for a figure. A string that happens
to begin with the mark keeps it doubled, so every string reads back as it was.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from functools import cache
from typing import Any

_MARK = "\ufdd0"  # a Unicode noncharacter: no text a person wrote starts with it
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}  # as json writes them


def dumps(data: Any, *, compact: bool = False) -> str:
    """`data` as JSON text that SQLite's JSON functions accept, whatever numbers it holds. `compact`: without a
    blank after each comma and colon (a twelfth of a front matter's bytes), for documents read only as JSON; a value
    compared as text (a setting's) keeps them, as people type it."""
    separators = (",", ":") if compact else None
    text = json.dumps(data, ensure_ascii=False, default=str, separators=separators)
    if _MARK in text:  # rarely: only then is every string looked at
        text = json.dumps(_doubled(data), ensure_ascii=False, default=str, separators=separators)
    if "NaN" in text or "Infinity" in text:  # json wrote a number as one of these, or a string holds the word
        text = _TOKENS.sub(_written, text)
    return text


def loads(text: str) -> Any:
    """What `dumps` wrote, NaN and the infinities as floats again."""
    data = json.loads(text)
    return _unmarked(data) if _MARK in text else data


def packed(data: Any) -> bytes:
    """`data` as the index keeps a front matter or a board row's facts: its compact JSON (`dumps`), zlib-compressed
    with the entry schema's names as a preset dictionary (a kilobyte or two compresses poorly alone: the names every
    entry repeats are then found in the dictionary). Read back in Python only (`unpacked_text`, `unpacked`)."""
    packer = zlib.compressobj(zdict=dictionary())
    return packer.compress(dumps(data, compact=True).encode("utf-8", "surrogatepass")) + packer.flush()


def unpacked_text(stored: bytes) -> str:
    """The JSON text `packed` compressed, as `dumps` wrote it."""
    unpacker = zlib.decompressobj(zdict=dictionary())
    return (unpacker.decompress(stored) + unpacker.flush()).decode("utf-8", "surrogatepass")


def unpacked(stored: bytes) -> Any:
    """What `packed` was given, NaN and the infinities as floats again."""
    return loads(unpacked_text(stored))


@cache
def dictionary() -> bytes:
    """Every property name and enumerated value of the entry schema, each as JSON writes it before a colon. The
    dictionary is part of the index's format (kb.index.schema.FORMAT): an index packed with another is rebuilt."""
    from kb.model.validation import entry_schema

    words: set[str] = set()
    _schema_words(entry_schema(), words)
    return ",".join(json.dumps(word, ensure_ascii=False) + ":" for word in sorted(words)).encode()


def _schema_words(schema: Any, words: set[str]) -> None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                words.update(value)
            elif key == "enum" and isinstance(value, list):
                words.update(str(item) for item in value)
            _schema_words(value, words)
    elif isinstance(schema, list):
        for item in schema:
            _schema_words(item, words)


# A string (left as it is) or a number json wrote for NaN or an infinity, outside any string.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN', re.DOTALL)
_MARKED = {token: json.dumps(_MARK + token, ensure_ascii=False) for token in _NON_FINITE}


def _written(found: re.Match[str]) -> str:
    token = found.group()
    return _MARKED.get(token, token)


def _doubled(value: Any) -> Any:
    if isinstance(value, str):
        return _MARK + value if value.startswith(_MARK) else value
    if isinstance(value, dict):
        return {key: _doubled(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_doubled(item) for item in value]
    return value


def _unmarked(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_MARK):
        return _NON_FINITE.get(value[1:], value[1:])
    if isinstance(value, dict):
        return {key: _unmarked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    return value
