"""Expectations kept in git: what must hold for a workload and backend, checked against the newest evidence.

The pattern of PyTorch's benchmarks/dynamo/check_graph_breaks.py and update_expected.py: a file states
the expected figure per workload, a check says pass, fail or improved for each (a count below its bound
is an improvement to lock in), and one command rewrites the file from the newest results. The file,
`expectations.toml` at the knowledge base's root, reads:

    [[expect]]
    workload = "tiny-lm"
    backend = "cpu"
    mode = "compiled"       # optional: any mode
    figure = "graph_breaks" # graph_breaks, recompiles, passing_cases, or any timing or metric name
    max = 0                 # or min = ..., for figures where higher is better
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kb.config import loads_toml
from kb.errors import KbError
from kb.index import answers

FILE_NAME = "expectations.toml"
COUNTS = {"graph_breaks": ("compile", "graph_breaks", "count"), "recompiles": ("compile", "recompiles", "count")}
HEADROOM = 0.10  # a timing or rate is rewritten with this much room, and improved only beyond it
KEYS = {"workload", "backend", "mode", "figure", "max", "min"}


@dataclass
class Expectation:
    workload: str
    backend: str
    figure: str
    bound: float
    kind: str  # "max" or "min"
    mode: str | None = None
    line: int = 0  # of its [[expect]] in the file, for messages


@dataclass
class Outcome:
    expectation: Expectation
    verdict: str  # pass, fail, improved, missing
    actual: float | None
    entry: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read(path: Path) -> list[Expectation]:
    """The expectations in the file; a wrong one is an error naming the file, its line and the field."""
    if not path.is_file():
        raise KbError(f"{path}: no expectations yet; write [[expect]] tables (kb expect --help shows one)")
    text = path.read_text("utf-8")
    try:
        raw = loads_toml(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise KbError(f"{path}: not valid TOML: {exc}") from None
    lines = [number for number, line in enumerate(text.splitlines(), 1) if line.strip() == "[[expect]]"]
    found = []
    for index, item in enumerate(raw.get("expect") or []):
        line = lines[index] if index < len(lines) else 0
        where = f"{path}:{line}"
        unknown = set(item) - KEYS
        if unknown:
            raise KbError(f"{where}: unknown field {sorted(unknown)[0]!r}; the fields are {', '.join(sorted(KEYS))}")
        for name in ("workload", "backend", "figure"):
            if not isinstance(item.get(name), str) or not item[name]:
                raise KbError(f'{where}: {name}: expected a name, e.g. {name} = "tiny-lm"')
        bounds = [k for k in ("max", "min") if k in item]
        if len(bounds) != 1 or isinstance(item[bounds[0]], bool) or not isinstance(item[bounds[0]], (int, float)):
            raise KbError(f"{where}: give one bound, max = NUMBER or min = NUMBER")
        kind = bounds[0]
        found.append(Expectation(item["workload"], item["backend"], item["figure"], float(item[kind]), kind,
                                 item.get("mode"), line))  # fmt: skip
    return found


def check(db: sqlite3.Connection, expectations: list[Expectation]) -> list[Outcome]:
    return [_outcome(db, expectation) for expectation in expectations]


def _outcome(db: sqlite3.Connection, expectation: Expectation) -> Outcome:
    actual, entry = newest(db, expectation)
    if actual is None:
        return Outcome(expectation, "missing", None, None)
    bound = expectation.bound
    room = 0.0 if _counted(expectation.figure) else HEADROOM
    if expectation.kind == "max":
        verdict = "fail" if actual > bound else "improved" if actual < bound * (1 - room) else "pass"
    else:
        verdict = "fail" if actual < bound else "improved" if actual > bound * (1 + room) else "pass"
    return Outcome(expectation, verdict, actual, entry)


def newest(db: sqlite3.Connection, expectation: Expectation) -> tuple[float | None, str | None]:
    """The figure in the newest completed run (or coverage entry) of the workload, backend and mode."""
    wanted = "coverage" if expectation.figure == "passing_cases" else "run"
    rows = [
        row
        for row in answers.answer_rows(db, expectation.workload)
        if row["kind"] == wanted and row["backend"] == expectation.backend and row["source"] != "reported"
        and (expectation.mode is None or row["mode"] == expectation.mode) and row["status"] in ("completed", None)
    ]  # fmt: skip
    data = answers.front_matters(db, [row["id"] for row in rows[:20]])
    for row in rows[:20]:  # newest first
        value = figure(data.get(row["id"]) or {}, expectation.figure)
        if value is not None:
            return value, row["id"]
    return None, None


def figure(data: dict[str, Any], name: str) -> float | None:
    if name == "passing_cases":
        value: Any = (data.get("coverage") or {}).get("passed")
    elif name in COUNTS:
        section, part, key = COUNTS[name]
        value = ((data.get(section) or {}).get(part) or {}).get(key) if isinstance(data.get(section), dict) else None
        if value is None and isinstance(data.get(section), dict):
            value = 0 if data[section].get("frame_count") is not None else None  # compiled, and nothing broke
    else:
        timing = (data.get("timings") or {}).get(name)
        metric = (data.get("metrics") or {}).get(name)
        value = timing.get("median") if isinstance(timing, dict) else timing
        value = value if value is not None else (metric.get("value") if isinstance(metric, dict) else None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _counted(name: str) -> bool:
    return name in COUNTS or name == "passing_cases"


def rewrite(db: sqlite3.Connection, path: Path, expectations: list[Expectation]) -> list[Outcome]:
    """Set every bound to the newest evidence (with room for timings and rates), as update_expected.py does;
    an expectation without evidence keeps its bound. The file is written whole, in one atomic step."""
    from kb import atomic

    outcomes = check(db, expectations)
    blocks = []
    for outcome in outcomes:
        item = outcome.expectation
        bound = item.bound
        if outcome.actual is not None:
            room = 0.0 if _counted(item.figure) else HEADROOM
            bound = outcome.actual * (1 + room if item.kind == "max" else 1 - room)
        lines = ["[[expect]]", f"workload = {json.dumps(item.workload)}", f"backend = {json.dumps(item.backend)}"]
        if item.mode:
            lines.append(f"mode = {json.dumps(item.mode)}")
        shown = int(bound) if _counted(item.figure) else round(bound, 4)
        lines += [f"figure = {json.dumps(item.figure)}", f"{item.kind} = {shown}"]
        blocks.append("\n".join(lines))
    header = "# What must hold, per workload and backend: kb expect checks it, kb expect --update rewrites it.\n\n"
    atomic.write_text(path, header + "\n\n".join(blocks) + "\n")
    return outcomes
