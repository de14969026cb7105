"""Put entries side by side: what differs between them, and how their timings and metrics compare.

The first entry is the baseline: every figure gets its ratio to the baseline's and, where it is known
whether higher or lower is better, a word for the direction. Step times that carry a spread are judged
against the noise: a difference counts only when the p10-p90 intervals of the two runs do not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb.entry import Entry
from kb.errors import KbError

# Kinds whose figures can stand side by side: measured runs with reported figures, coverage with coverage.
COMPARABLE = ({"run", "report"}, {"coverage"})
NOISE_METHOD = "p10-p90 intervals of the step times overlap: within noise; apart: a real difference"
TIMINGS = ("wall_s", "load_s", "compile_s", "first_step_s", "warmup_s", "step_s")
DIFF_SECTIONS = ("versions", "settings", "environment")
IDENTITY = (("backend", "backend"), ("mode", "mode"), ("workload.name", "workload"), ("status", "status"),
            ("git.commit", "git commit"), ("hardware.cpu", "cpu"), ("hardware.hostname", "host"),
            ("provenance.source", "source"))  # fmt: skip


@dataclass
class Row:
    """One compared figure: its value in each entry, the ratio to the first, and what the ratio means."""

    section: str
    name: str
    values: list[Any]
    unit: str | None = None
    better: str | None = None  # "higher", "lower" or None when it is not known
    ratios: list[float | None] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)


@dataclass
class CaseChanges:
    """How one coverage entry's test cases moved against the baseline's: the regressions a release brought."""

    entry: str
    newly_passing: list[str]
    newly_failing: list[str]  # failed or error now, passed or skipped (or absent) in the baseline
    newly_skipped: list[str]
    added: int  # cases the baseline did not have
    removed: int  # baseline cases this entry does not have


@dataclass
class Comparison:
    entries: list[Entry]
    differences: list[str]
    rows: list[Row]
    cases: list[CaseChanges] = field(default_factory=list)
    noise_method: str = NOISE_METHOD

    def as_dict(self) -> dict[str, Any]:
        return {
            "entries": [{"id": e.id, "title": e.title, "kind": e.kind, "status": e.status} for e in self.entries],
            "differences": self.differences,
            "rows": [row.__dict__ for row in self.rows],
            "cases": [change.__dict__ for change in self.cases],
            "noise_method": self.noise_method,
        }


def compare(entries: list[Entry]) -> Comparison:
    if len(entries) < 2:
        raise KbError("compare needs at least two entries")
    kinds = {entry.kind for entry in entries}
    if not any(kinds <= group for group in COMPARABLE):
        listed = ", ".join(f"{e.id} ({e.kind})" for e in entries)
        raise KbError(
            f"these entries cannot be compared: {listed}; compare runs and reports with each other, "
            "or coverage entries with each other"
        )
    rows = _timing_rows(entries) + _metric_rows(entries) + _evidence_rows(entries)
    cases = case_changes(entries) if kinds == {"coverage"} else []
    return Comparison(entries=entries, differences=differences(entries), rows=rows, cases=cases)


def case_changes(entries: list[Entry]) -> list[CaseChanges]:
    """Each later coverage entry's cases against the first's, from their per-case tables (cases.tsv)."""
    baseline = _cases(entries[0])
    changes = []
    for entry in entries[1:]:
        cases = _cases(entry)
        if baseline is None or cases is None:
            continue
        failing = {"failed", "error"}
        changes.append(
            CaseChanges(
                entry=entry.id,
                newly_passing=sorted(c for c, o in cases.items() if o == "passed" and baseline.get(c, "passed") != o),
                newly_failing=sorted(c for c, o in cases.items() if o in failing and baseline.get(c) not in failing),
                newly_skipped=sorted(c for c, o in cases.items() if o == "skipped" and baseline.get(c, o) != o),
                added=len(cases.keys() - baseline.keys()),
                removed=len(baseline.keys() - cases.keys()),
            )
        )
    return changes


def _cases(entry: Entry) -> dict[str, str] | None:
    """case -> outcome from the entry's per-case table; None when it has none (typed in by hand, say)."""
    name = (entry.data.get("coverage") or {}).get("cases")
    if not isinstance(name, str) or entry.path is None:
        return None
    path = entry.path.with_suffix("") / name
    try:
        with open(path, encoding="utf-8") as handle:
            next(handle, None)  # the header
            return {case: outcome for case, outcome, *_ in (line.rstrip("\n").split("\t") for line in handle)}
    except (OSError, ValueError):
        return None


def differences(entries: list[Entry]) -> list[str]:
    """Every version, setting, hardware or environment difference, as `name a → b`."""
    lines = []
    for dotted, label in IDENTITY:
        values = [entry.get(dotted) for entry in entries]
        if _differ(values):
            lines.append(f"{label} {_arrow(values)}")
    accelerators = [_accelerators(entry) for entry in entries]
    if _differ(accelerators):
        lines.append(f"accelerators {_arrow(accelerators)}")
    for section in DIFF_SECTIONS:
        names = sorted({name for entry in entries for name in (entry.data.get(section) or {})})
        for name in names:
            values = [(entry.data.get(section) or {}).get(name) for entry in entries]
            if _differ(values):
                lines.append(f"{name} {_arrow(values)}")
    return list(dict.fromkeys(lines))  # a setting that repeats an identity field (mode) is said once


def _timing_rows(entries: list[Entry]) -> list[Row]:
    names = [name for name in TIMINGS if any(entry.get(f"timings.{name}") is not None for entry in entries)]
    extra = sorted(
        {
            name
            for entry in entries
            for name in (entry.data.get("timings") or {})
            if name.endswith("_s") and name not in TIMINGS
        }
    )
    rows = []
    for name in [*names, *extra]:
        raw = [entry.get(f"timings.{name}") for entry in entries]
        values = [value.get("median") if isinstance(value, dict) else value for value in raw]
        row = Row("timings", name, values, unit="s", better="lower")
        _judge(row, spreads=raw if name == "step_s" else None)
        rows.append(row)
    return rows


def _metric_rows(entries: list[Entry]) -> list[Row]:
    names = sorted({name for entry in entries for name in (entry.data.get("metrics") or {})})
    rows = []
    for name in names:
        metrics = [(entry.data.get("metrics") or {}).get(name) or {} for entry in entries]
        unit = next((m.get("unit") for m in metrics if m.get("unit")), None)
        better = next((m.get("better") for m in metrics if m.get("better")), None) or guess_better(name, unit)
        row = Row("metrics", name, [m.get("value") for m in metrics], unit=unit, better=better)
        _judge(row)
        rows.append(row)
    return rows


def _evidence_rows(entries: list[Entry]) -> list[Row]:
    """Compile, fallback, numerics and failure evidence: shown side by side, judged by people."""
    fields = (("compile", "cache"), ("compile", "frame_count"), ("compile", "graph_breaks.count"),
              ("compile", "recompiles.count"), ("fallbacks", "stayed_on_device"), ("numerics", "verdict"),
              ("failure", "class"), ("adaptations", None))  # fmt: skip
    rows = []
    for section, name in fields:
        if name is None:
            values = [len(entry.data.get(section) or []) or None for entry in entries]
            name = "count"
        else:
            values = [entry.get(f"{section}.{name}") for entry in entries]
        if any(value is not None for value in values):
            rows.append(Row(section, name, values, ratios=[None] * len(values), verdicts=[""] * len(values)))
    return rows


def guess_better(name: str, unit: str | None) -> str | None:
    """Throughput is better higher; time, latency, loss, error and memory are better lower."""
    text = f"{name} {unit or ''}".lower()
    if "/s" in text or "per_s" in text or "throughput" in text or "accuracy" in text:
        return "higher"
    if any(word in text for word in ("loss", "latency", "time", "_s ", "_ms", "error", "memory", "_gb")):
        return "lower"
    return None


def _judge(row: Row, spreads: list[Any] | None = None) -> None:
    base = row.values[0]
    for index, value in enumerate(row.values):
        number = isinstance(value, (int, float)) and isinstance(base, (int, float)) and bool(base)
        row.ratios.append(round(value / base, 4) if number else None)
        if index == 0 or not number or row.better is None:
            row.verdicts.append("baseline" if index == 0 else "")
            continue
        if spreads is not None and _overlap(spreads[0], spreads[index]):
            row.verdicts.append("within noise")
            continue
        improved = value > base if row.better == "higher" else value < base
        row.verdicts.append("same" if value == base else "better" if improved else "worse")


def _overlap(first: Any, other: Any) -> bool:
    """Whether two step-time spreads overlap (both need p10 and p90; otherwise there is nothing to say)."""
    if not (isinstance(first, dict) and isinstance(other, dict)):
        return False
    try:
        return first["p10"] <= other["p90"] and other["p10"] <= first["p90"]
    except (KeyError, TypeError):
        return False


def _accelerators(entry: Entry) -> str | None:
    found = (entry.data.get("hardware") or {}).get("accelerators") or []
    names = [
        f"{a.get('count', 1) if isinstance(a.get('count'), int) else 1}x {a.get('name')}"
        for a in found
        if isinstance(a, dict) and a.get("name")
    ]
    return ", ".join(names) or None


def _differ(values: list[Any]) -> bool:
    return len({repr(value) for value in values}) > 1


def _arrow(values: list[Any]) -> str:
    return " → ".join("-" if value is None else str(value) for value in values)
