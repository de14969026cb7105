"""`kb.toml`: the file that marks a knowledge base's root and holds its settings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

from kb.errors import KbError

TEMPLATE = """\
# A kb knowledge base. entries/ holds the evidence (the truth); .kb/ holds derived caches (safe to delete).

[record]
# Distributions whose versions each recorded run keeps, besides kb's own list (torch, backends, CUDA libraries...).
packages = []
# Prefixes of environment variables that shape a run, besides kb's own list (CUDA_, NEURON_, XLA_, TORCH...).
env_prefixes = []
# Lines of command output kept in the entry itself; the whole output is always an attachment.
tail_lines = 40
# Seconds each accelerator probe (nvidia-smi, rocm-smi, neuron-ls) may take.
probe_timeout_s = 5.0

[answers]
# The backend the team runs on today (e.g. "cuda", or "cuda compiled" for one mode of it): kb board and
# kb compare --by give every ratio against it. Empty: guessed (the backend with the most completed runs), and said.
incumbent = ""
# The practical floor: a change smaller than this share (0.02 = 2%) is "equivalent", whatever the runs say.
floor = 0.02
"""


# Named tuples, not dataclasses: as immutable, and far quicker to make at import (every recording reads them).
class RecordConfig(NamedTuple):
    packages: tuple[str, ...] = ()
    env_prefixes: tuple[str, ...] = ()
    tail_lines: int = 40
    probe_timeout_s: float = 5.0


class AnswersConfig(NamedTuple):
    incumbent: str = ""
    floor: float = 0.02


class Config(NamedTuple):
    record: RecordConfig = RecordConfig()
    answers: AnswersConfig = AnswersConfig()


def loads_toml(text: str) -> dict[str, Any]:
    """TOML read into a dict; a mistake in it raises ValueError (tomllib.TOMLDecodeError). Imported here, when a
    file is read: most commands read none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib.loads(text)


def load_config(path: Path) -> Config:
    """Read kb.toml; a syntax error or a wrong setting names the file and what to change."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return Config()
    return load_config_text(path, text)


def _config(path: Path, raw: dict[str, Any]) -> Config:
    unknown = set(raw) - {"record", "answers"}
    if unknown:
        raise KbError(f"{path}: unknown section [{sorted(unknown)[0]}]; known sections: [record], [answers]")
    return Config(
        record=_section(path, "record", raw.get("record", {}), RecordConfig),
        answers=_section(path, "answers", raw.get("answers", {}), AnswersConfig),
    )


def _section(path: Path, name: str, raw: dict[str, Any], cls: type[RecordConfig | AnswersConfig]) -> Any:
    known = cls._field_defaults  # every setting has one
    values = {}
    for key, value in raw.items():
        if key not in known:
            raise KbError(f"{path}: [{name}] {key}: unknown setting; known settings: {', '.join(known)}")
        default = known[key]
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise KbError(f"{path}: [{name}] {key}: expected a list of strings, found {value!r}")
            value = tuple(value)
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise KbError(f"{path}: [{name}] {key}: expected a positive number, found {value!r}")
            value = float(value)
        elif isinstance(default, int) and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise KbError(f"{path}: [{name}] {key}: expected a whole number >= 0, found {value!r}")
        elif isinstance(default, str) and not isinstance(value, str):
            raise KbError(f"{path}: [{name}] {key}: expected a string, found {value!r}")
        values[key] = value
    return cls(**values)


def set_incumbent(path: Path, incumbent: str) -> None:
    """Write [answers] incumbent into kb.toml, keeping every other line (and comment) as it is."""
    import json
    import re

    from kb.store import atomic

    text = path.read_text("utf-8")
    line = f"incumbent = {json.dumps(incumbent)}"
    found = re.search(r"(?m)^incumbent\s*=.*$", text)
    if found:
        text = text[: found.start()] + line + text[found.end() :]
    elif re.search(r"(?m)^\[answers\]\s*$", text):
        text = re.sub(r"(?m)^\[answers\]\s*$", f"[answers]\n{line}", text, count=1)
    else:
        text = text.rstrip("\n") + f"\n\n[answers]\n{line}\n"
    load_config_text(path, text)
    atomic.write_text(path, text)


def load_config_text(path: Path, text: str) -> Config:
    """kb.toml's text read as load_config reads the file: refused with the file's name when wrong."""
    try:
        raw = loads_toml(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise KbError(f"{path}: not valid TOML: {exc}") from None
    return _config(path, raw)
