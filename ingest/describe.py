"""What a person knows about a run (title, workload, backend, settings, metrics...), as entry fields."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kb.errors import KbError
from kb.model.frontmatter import Plain
from kb.model.validation import coerce
from kb.secrets.redact import MASK, is_secret_name, redact_text

_SETTING = re.compile(r"(?P<key>[A-Za-z0-9_][A-Za-z0-9_.:-]*)=(?P<value>.*)\Z", re.S)
_METRIC = re.compile(
    r"(?P<name>[A-Za-z0-9_][A-Za-z0-9_:+-]*)=\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>\S.*)?\Z"
)


TITLE_MAX = 80
# Programs that run another named by an argument: the title is the program they run (`python train.py`: train).
_RUNNERS = re.compile(
    r"(?:python[0-9.]*|pypy[0-9.]*|py|bash|sh|zsh|uv|uvx|torchrun|accelerate|deepspeed|mpirun|mpiexec|srun|env|time"
    r"|nohup|exec|launch|run|neuron_parallel_compile)(?:\.exe)?\Z"
)
# Interpreter options that take a value (python -X dev -W error train.py): the value is not the script.
_VALUE_OPTIONS = {"-X", "-W", "-Q", "--nproc-per-node", "--nproc_per_node", "--nnodes", "-n", "-np", "--config_file"}


def command_title(argv: list[str]) -> str:
    """What ran, named as a person would: the script or module, never the folders it lies in.
    `/venv/bin/python ~/exp/train.py --lr 3` -> train; `python -m pkg.mod` -> mod; `./bench.sh` -> bench;
    `sh -c '...'` -> sh. An interpreter's own flags and a launcher's options are passed over."""
    if not argv:
        return "command"
    program = _name(argv[0])
    words = iter(argv[1:])
    for word in words:
        if not _RUNNERS.match(program):
            break
        if word == "-m":
            module = next(words, "")
            return module.rsplit(".", 1)[-1] or program
        if word == "-c":
            return program
        if word in _VALUE_OPTIONS:
            next(words, None)
            continue
        if word.startswith("-") or "=" in word:
            continue
        program = _name(word)
    return program


def identity_title(workload: str | None, backend: str | None, mode: str | None) -> str | None:
    """The title a run's identity gives when nobody named it: "tiny-lm cuda compiled", cut to TITLE_MAX."""
    text = " ".join(part for part in (workload, backend, mode) if part)
    if not text:
        return None
    return text if len(text) <= TITLE_MAX else text[: TITLE_MAX - 1] + "…"


def _name(word: str) -> str:
    """The last part of a path, without a script's extension: `/home/me/exp/train.py` -> train."""
    base = word.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or word
    stem, dot, extension = base.rpartition(".")
    return stem if dot and stem and extension.lower() in ("py", "sh", "bash", "pyz", "exe", "ipynb") else base


@dataclass
class RunInfo:
    """The options shared by every way of recording: `kb record` with or without a command, and imports."""

    title: str | None = None
    workload: str | None = None
    backend: str | None = None
    mode: str | None = None
    tags: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    note: str | None = None
    reference: str | None = None
    rerun_of: str | None = None
    author: str | None = None  # as a person gave it (--author), which what the run hands over never replaces
    signed_by: str | None = None  # who records, when no author was given: git's identity, else the login

    def __post_init__(self) -> None:
        # Typed text can hold a pasted token like any log; the title also becomes the entry's file name.
        for name in ("title", "workload", "author"):
            value = getattr(self, name)
            if value:
                setattr(self, name, redact_text(value))

    def fields(self) -> dict[str, Any]:
        """Entry fields for what was given; absent options give no field."""
        out: dict[str, Any] = {
            "author": self.author or self.signed_by,
            "tags": sorted(set(self.tags)) or None,
            "links": {
                role: target for role, target in (("reference", self.reference), ("rerun_of", self.rerun_of)) if target
            }
            or None,
            "workload": {"name": self.workload} if self.workload else None,
            "backend": self.backend,
            "mode": self.mode,
            "settings": dict(self.settings) or None,
            "metrics": dict(self.metrics) or None,
        }
        return {key: value for key, value in out.items() if value is not None}

    def body(self) -> str:
        return redact_text(self.note.strip()) + "\n" if self.note and self.note.strip() else ""


def parse_setting(text: str) -> tuple[str, Any]:
    """`batch=8` -> ('batch', 8); `dtype=bf16` -> ('dtype', 'bf16'); `torch_version=2.10` keeps '2.10'."""
    match = _SETTING.match(text)
    if not match:
        raise KbError(f"--setting {text!r}: expected key=value, e.g. --setting batch=8")
    if is_secret_name(match["key"]):
        return match["key"], MASK
    return match["key"], coerce(Plain(redact_text(match["value"].strip())))


def parse_metric(text: str) -> tuple[str, dict[str, Any]]:
    """`tokens_per_s=5120tokens/s` or `'step_time=15.2 ms'` -> name, {value, unit}."""
    match = _METRIC.match(text.strip())
    if not match:
        raise KbError(f"--metric {text!r}: expected name=number[unit], e.g. --metric tokens_per_s=5120tokens/s")
    metric: dict[str, Any] = {"value": float(match["value"])}
    if match["unit"]:
        metric["unit"] = match["unit"].strip()
    return match["name"], metric


def parse_all(settings: list[str], metrics: list[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    return dict(map(parse_setting, settings)), dict(map(parse_metric, metrics))


def parse_versions(items: list[str]) -> dict[str, str]:
    """`torch=2.9.0` -> {'torch': '2.9.0'}: versions are always text (2.10 is not 2.1)."""
    versions = {}
    for text in items:
        name, sep, version = text.partition("=")
        if not sep or not name.strip() or not version.strip():
            raise KbError(f"--version {text!r}: expected package=version, e.g. --version torch=2.9.0")
        versions[name.strip()] = version.strip()
    return versions
