"""Expectations kept in git: what must hold for a workload and backend, checked against the newest evidence.

The pattern of PyTorch's benchmarks/dynamo/check_graph_breaks.py and update_expected.py: a file states
the expected figure per workload, a check says pass, fail or improved for each (a count below its bound
is an improvement to lock in), and one command rewrites the file from the newest results. The file,
`expectations.toml` at the knowledge base's root, reads:

    [[expect]]
    workload = "tiny-lm"
    backend = "cpu"
    mode = "compiled"       # optional: any mode
    figure = "graph_breaks" # a counter (graph_breaks, recompiles, graphs, fallback_ops), passing_cases,
    max = 0                 # numerics (no bound: they must pass), or any timing or metric; min = ... where
                            # higher is better

A gate stops what it exists to stop: the newest run of the pair failing (with its class) or failing numerics
(a NaN loss included) is a FAIL whatever the figure; an interrupted run (a Ctrl-C) is not evidence and is passed
over. Counters are deterministic and read from the newest completed run. A timing or rate is the median of the
newest run's repeats, pooled as the board pools a cell's: the same release of the backend's package and the same
configuration (figures.configuration: shapes, devices, hardware, launch times apart from device times; a step
time or rate that is a launch time is no evidence against a bound); runs on a busy machine are kept out (counted),
as are numerics-failed ones. It is shown with its n and its noise (the runs'
spread as a share of their median); an improvement counts only beyond that noise (or 10%). `--update` only
tightens a bound unless `--relax` names it, and sets a timing bound only from MIN_RUNS runs or more, with the
same margin as room.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kb.answers import figures
from kb.answers.board import backend_package
from kb.answers.changepoints import release_in
from kb.answers.verdict import MIN_RUNS, spread
from kb.errors import KbError
from kb.index import answers
from kb.store.config import loads_toml

FILE_NAME = "expectations.toml"
COUNTS = {"graph_breaks": ("compile", "graph_breaks", "count"), "recompiles": ("compile", "recompiles", "count")}
COUNTERS = (*COUNTS, "graphs", "fallback_ops")  # deterministic: the same program counts the same
NUMERICS = "numerics"
HEADROOM = 0.10  # a timing or rate is rewritten with this much room (or its runs' spread), and improved beyond it
KEYS = {"workload", "backend", "mode", "figure", "max", "min"}
NOT_EVIDENCE = ("interrupted", "running")  # a user's Ctrl-C, a run still going: passed over


@dataclass
class Expectation:
    workload: str
    backend: str
    figure: str
    bound: float | None  # None for numerics: they must pass
    kind: str  # "max", "min" or "pass"
    mode: str | None = None
    line: int = 0  # of its [[expect]] in the file, for messages

    @property
    def name(self) -> str:
        """How --relax names it: WORKLOAD:BACKEND[:MODE]:FIGURE."""
        return ":".join(part for part in (self.workload, self.backend, self.mode, self.figure) if part)


@dataclass
class Outcome:
    expectation: Expectation
    verdict: str  # pass, fail, improved, missing
    actual: float | None
    entry: str | None
    n: int = 0  # runs behind `actual`
    noise: float = 0.0  # how far apart those runs were, as a share of their median: a timing bound's room
    reason: str = ""  # why it failed or is missing: "failed: compile_error", "numerics failed: ..."
    left_out: str = ""  # runs not pooled with the newest: "2 on other hardware, 1 on a busy machine"
    notes: list[str] = field(default_factory=list)  # what --update did not do, and why

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
        if item["figure"] == NUMERICS:
            if bounds:
                raise KbError(f'{where}: figure = "numerics" takes no bound: they must pass; drop {bounds[0]}')
            found.append(Expectation(item["workload"], item["backend"], NUMERICS, None, "pass", item.get("mode"), line))
            continue
        if len(bounds) != 1 or isinstance(item[bounds[0]], bool) or not isinstance(item[bounds[0]], (int, float)):
            raise KbError(f"{where}: give one bound, max = NUMBER or min = NUMBER")
        kind = bounds[0]
        found.append(Expectation(item["workload"], item["backend"], item["figure"], float(item[kind]), kind,
                                 item.get("mode"), line))  # fmt: skip
    return found


def check(db: sqlite3.Connection, expectations: list[Expectation], path: Path | None = None) -> list[Outcome]:
    known(db, expectations, path)
    return [_outcome(db, expectation) for expectation in expectations]


def known(db: sqlite3.Connection, expectations: list[Expectation], path: Path | None) -> None:
    """An unknown figure, workload or backend is a configuration error naming the line, with a did-you-mean."""
    from kb.answers.names import did_you_mean

    figures_known = {*COUNTERS, NUMERICS, "passing_cases", *answers.figure_names(db)}
    workloads, backends = answers.workload_names(db), answers.backend_names(db)
    for item in expectations:
        where = f"{path}:{item.line}" if path else f"expectation {item.name}"
        for field_name, value, names in (("figure", item.figure, figures_known), ("workload", item.workload, workloads),
                                         ("backend", item.backend, backends)):  # fmt: skip
            if value not in names:
                raise KbError(f"{where}: {field_name} {value!r} is not one kb knows{did_you_mean(value, names)}")


def _pair(db: sqlite3.Connection, expectation: Expectation) -> list[dict[str, Any]]:
    """The measured runs (or coverage entries) of the expectation's workload, backend and mode, newest first."""
    wanted = "coverage" if expectation.figure == "passing_cases" else "run"
    return [
        row for row in answers.workload_evidence(db, expectation.workload)
        if row["kind"] == wanted and row["backend"] == expectation.backend and row["source"] != "reported"
        and (expectation.mode is None or row["mode"] == expectation.mode) and row["status"] not in NOT_EVIDENCE
    ]  # fmt: skip


def _outcome(db: sqlite3.Connection, expectation: Expectation) -> Outcome:
    rows = _pair(db, expectation)
    if not rows:
        return Outcome(expectation, "missing", None, None, reason="no evidence")
    newest = rows[0]
    if newest["status"] not in ("completed", None):
        failure = newest["failure_class"] or newest["status"]
        return Outcome(
            expectation, "fail", None, str(newest["id"]), reason=f"the newest run {newest['status']}: {failure}"
        )
    if figures.numerics(newest["data"]) == "failed":
        why = figures.nonfinite(newest["data"]) or "its check failed"
        return Outcome(expectation, "fail", None, str(newest["id"]), reason=f"numerics failed: {why}")
    if expectation.figure == NUMERICS:
        passed = figures.numerics(newest["data"]) == "passed"
        return Outcome(
            expectation,
            "pass" if passed else "fail",
            None,
            str(newest["id"]),
            reason="" if passed else "numerics unchecked in the newest run: check them (r.check_numerics)",
        )
    actual, n, noise, left_out = _actual(rows, expectation)
    if actual is None:
        return Outcome(
            expectation, "missing", None, None, reason=left_out or f"no {expectation.figure} in the newest runs"
        )
    bound = float(expectation.bound or 0.0)
    room = 0.0 if _counted(expectation.figure) else max(HEADROOM, noise)
    if expectation.kind == "max":
        verdict = "fail" if actual > bound else "improved" if actual < bound * (1 - room) else "pass"
    else:
        verdict = "fail" if actual < bound else "improved" if actual > bound * (1 + room) else "pass"
    return Outcome(expectation, verdict, actual, str(newest["id"]), n, noise, left_out=left_out)


def _actual(rows: list[dict[str, Any]], expectation: Expectation) -> tuple[float | None, int, float, str]:
    """A counter from the newest completed run; a timing or rate as the median of the newest run's repeats, with
    n, their spread as a share of the median, and what was left out (or, with no figure, why)."""
    name = expectation.figure
    if _counted(name):
        return figure(rows[0]["data"], name), 1, 0.0, ""
    pooled, left_out = repeats(rows, expectation.backend)
    if pooled and figures.device_timed(name) and figures.launch_times(pooled[0]["data"]):
        return None, 0, 0.0, f"{figures.LAUNCH_TIMES} ({figures.LAUNCH_TIMES_WHY})"
    values = [v for v in (figure(row["data"], name) for row in pooled) if v is not None]
    if not values:
        return None, 0, 0.0, left_out if not pooled else ""
    median = statistics.median(values)
    low, high = spread(values) or (median, median)
    return median, len(values), (high - low) / median if median else 0.0, left_out


def repeats(rows: list[dict[str, Any]], backend: str) -> tuple[list[dict[str, Any]], str]:
    """The newest completed run off a busy machine and its repeats (module docstring), and what was left out."""
    done = [row for row in rows if row["status"] in ("completed", None) and figures.numerics(row["data"]) != "failed"]
    calm = [row for row in done if not figures.busy(row["data"])]
    busy = len(done) - len(calm)
    if not calm:
        return [], f"only runs on a busy machine ({busy}): no verdict stands on them" if busy else ""
    package = backend_package(backend, calm)

    def release(row: dict[str, Any]) -> str | None:
        return release_in(row["data"], package) if package else None

    newest = calm[0]
    like, hardware = figures.configuration(newest["data"]), figures.machine(newest["data"])
    same = [row for row in calm if release(row) == release(newest)]
    pooled = [row for row in same if figures.configuration(row["data"]) == like]
    elsewhere = sum(1 for row in same if figures.machine(row["data"]) != hardware
                    and figures.configuration(row["data"])[:2] == like[:2])  # fmt: skip
    said = [f"{elsewhere} on other hardware" if elsewhere else "", f"{busy} on a busy machine" if busy else ""]
    return pooled, ", ".join(part for part in said if part)


def figure(data: dict[str, Any], name: str) -> float | None:
    if name == "passing_cases":
        value: Any = (data.get("coverage") or {}).get("passed")
    elif name in COUNTS:
        section, part, key = COUNTS[name]
        value = ((data.get(section) or {}).get(part) or {}).get(key) if isinstance(data.get(section), dict) else None
        if value is None and isinstance(data.get(section), dict):
            value = 0 if data[section].get("frame_count") is not None else None  # compiled, and nothing broke
    elif name == "graphs":
        value = (data.get("compile") or {}).get("graphs") if isinstance(data.get("compile"), dict) else None
    elif name == "fallback_ops":
        section = data.get("fallbacks")
        ops = section.get("ops") if isinstance(section, dict) else None
        value = len(ops) if isinstance(ops, list) else None
    else:
        timing = (data.get("timings") or {}).get(name)
        metric = (data.get("metrics") or {}).get(name)
        value = timing.get("median") if isinstance(timing, dict) else timing
        value = value if value is not None else (metric.get("value") if isinstance(metric, dict) else None)
    return figures.finite_number(value)


def _counted(name: str) -> bool:
    return name in COUNTERS or name == "passing_cases"


def rewrite(
    db: sqlite3.Connection, path: Path, expectations: list[Expectation], relax: tuple[str, ...] = ()
) -> list[Outcome]:
    """Bounds from the newest evidence (with room for timings and rates), as update_expected.py does, but only
    tighter: a bound is relaxed only where `relax` names it (WORKLOAD:BACKEND[:MODE]:FIGURE). A failing pair,
    and a timing with fewer than MIN_RUNS runs, keep their bound. The file is written whole, in one atomic step."""
    from kb.answers.names import did_you_mean
    from kb.store import atomic

    names = {item.name for item in expectations}
    for name in relax:
        if name not in names:
            raise KbError(f"--relax {name}: no such expectation{did_you_mean(name, names)}")
    outcomes = check(db, expectations, path)
    blocks = []
    for outcome in outcomes:
        item = outcome.expectation
        _update(outcome, item.name in relax)
        lines = ["[[expect]]", f"workload = {json.dumps(item.workload)}", f"backend = {json.dumps(item.backend)}"]
        if item.mode:
            lines.append(f"mode = {json.dumps(item.mode)}")
        lines.append(f"figure = {json.dumps(item.figure)}")
        if item.bound is not None:
            shown = int(item.bound) if _counted(item.figure) else round(item.bound, 4)
            lines.append(f"{item.kind} = {shown}")
        blocks.append("\n".join(lines))
    header = "# What must hold, per workload and backend: kb expect checks it, kb expect --update rewrites it.\n\n"
    atomic.write_text(path, header + "\n\n".join(blocks) + "\n")
    return outcomes


def _update(outcome: Outcome, relaxed: bool) -> None:
    """The expectation's new bound, in place; what was left alone is said in the outcome's notes."""
    item = outcome.expectation
    if item.bound is None or outcome.actual is None:
        if outcome.reason and item.bound is not None:
            outcome.notes.append(f"kept: {outcome.reason}")
        return
    if not _counted(item.figure) and outcome.n < MIN_RUNS:
        outcome.notes.append(f"kept: {outcome.n} run(s); a timing bound needs {MIN_RUNS} repeats (kb record --repeat)")
        return
    room = 0.0 if _counted(item.figure) else max(HEADROOM, outcome.noise)
    proposed = outcome.actual * (1 + room if item.kind == "max" else 1 - room)
    tighter = proposed < item.bound if item.kind == "max" else proposed > item.bound
    if tighter or relaxed:
        item.bound = proposed
    elif proposed != item.bound:
        outcome.notes.append(f"kept: {proposed:g} would relax it; --relax {item.name} to allow")
