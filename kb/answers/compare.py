"""Put entries side by side: what differs between them, and how their timings and metrics compare.

The first entry is the baseline: every figure gets its ratio to the baseline's and, where it is known
whether higher or lower is better, a verdict from the one rule kb judges every comparison by
(kb.answers.verdict): faster or better, slower or worse, equivalent within the floor, or inconclusive, with
n. The noise that decides is between runs: each entry stands with its repeats (the runs of its group with
the same shapes, devices and versions, when `kb compare --workload` picks them), and a single run against a
single run is inconclusive, however far apart its figures; the spread of steps inside one run is no
footing. Reported figures stand beside measured ones, never ranked. Throughput of runs on different device
counts is compared per device, and compile times only cold with cold, warm with warm.

`grouped` (kb compare --workload) and `newest_usable` (the site's comparison pages) pick, per group of a
workload's runs, the newest usable one (completed, with figures): never a failed, killed, interrupted or
running run as anyone's baseline, which one rule (`baseline_index`) chooses.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kb.answers import figures, verdict
from kb.answers.verdict import FLOOR
from kb.errors import KbError
from kb.model.entry import Entry

# Kinds whose figures can stand side by side: measured runs with reported figures, coverage with coverage.
COMPARABLE = ({"run", "report"}, {"coverage"})
NOISE_METHOD = (
    "between runs: each figure's runs (n) against the baseline's, a bootstrap interval of the ratio of medians "
    "against a practical floor: faster/better, slower/worse, equivalent, or inconclusive (fewer than 3 runs a "
    "side, or the interval straddles the floor); reported figures are not ranked against measured ones"
)
USABLE_STATUSES = ("completed", None)  # reports have no status
NOT_RANKED = "reported, not ranked"
GROUPINGS = "backend, mode, or version:PACKAGE (e.g. --by version:torch)"
TIMINGS = ("wall_s", "load_s", "compile_s", "first_step_s", "warmup_s", "step_s")
DIFF_SECTIONS = ("versions", "settings", "environment")
IDENTITY = (("backend", "backend"), ("mode", "mode"), ("workload.name", "workload"), ("status", "status"),
            ("git.commit", "git commit"), ("git.dirty", "uncommitted changes"), ("hardware.cpu", "cpu"),
            ("hardware.cpu_threads", "cpu threads"), ("hardware.hostname", "host"), ("provenance.source", "source"),
            ("timings.step_s.count", "steady steps"))  # fmt: skip


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
    notes: list[str] = field(default_factory=list)  # what the grouping left out, and why
    runs: list[int] = field(default_factory=list)  # how many runs stand behind each entry's figures (its repeats)
    floor: float = FLOOR

    @property
    def labels(self) -> list[str]:
        return [label(entry) for entry in self.entries]

    def as_dict(self) -> dict[str, Any]:
        return {
            "entries": [
                {"id": e.id, "title": e.title, "kind": e.kind, "status": e.status, "label": label(e)}
                for e in self.entries
            ],
            "differences": self.differences,
            "rows": [row.__dict__ for row in self.rows],
            "cases": [change.__dict__ for change in self.cases],
            "noise_method": self.noise_method,
            "notes": self.notes,
            "runs": self.runs,
            "floor": self.floor,
        }


def label(entry: Entry) -> str:
    """`backend · mode · hardware`, the name of a column (the id stays beside it)."""
    parts = [entry.get("backend") or "?", entry.get("mode") or "?", _accelerators(entry) or entry.get("hardware.cpu")]
    reported = " (reported)" if entry.get("provenance.source") == "reported" else ""
    return " · ".join(str(part) for part in parts if part) + reported


def compare(entries: list[Entry], repeats: list[list[Entry]] | None = None, floor: float = FLOOR) -> Comparison:
    """The entries side by side; `repeats[i]` are the runs entry i stands for (itself alone by default)."""
    if len(entries) < 2:
        raise KbError("compare needs at least two entries")
    kinds = {entry.kind for entry in entries}
    if not any(kinds <= group for group in COMPARABLE):
        listed = ", ".join(f"{e.id} ({e.kind})" for e in entries)
        raise KbError(
            f"these entries cannot be compared: {listed}; compare runs and reports with each other, "
            "or coverage entries with each other"
        )
    runs = repeats or [[entry] for entry in entries]
    first = _sound_first(entries)
    entries = [entries[first], *entries[:first], *entries[first + 1 :]]
    runs = [runs[first], *runs[:first], *runs[first + 1 :]]
    rows = _timing_rows(entries, runs, floor) + _metric_rows(entries, runs, floor) + _evidence_rows(entries)
    _unranked(entries, rows)
    cases = case_changes(entries) if kinds == {"coverage"} else []
    return Comparison(entries=entries, differences=differences(entries), rows=rows, cases=cases,
                      runs=[len(found) for found in runs], floor=floor, notes=footing(entries))  # fmt: skip


def _sound_first(entries: list[Entry]) -> int:
    """Which entry is the baseline: the first given whose figures rank (it completed, its numerics held, its times
    are device times), else the first that completed, else the first. A failed run is never the baseline while
    another can be."""
    sound = [i for i, e in enumerate(entries) if not figures.failure(e.data) and not figures.launch_times(e.data)]
    completed = [i for i, e in enumerate(entries) if not figures.failure(e.data)]
    return (sound or completed or [0])[0]


def footing(entries: list[Entry]) -> list[str]:
    """What ranks against what, in words: each run that failed (class and message) or whose times are launch
    times, and which entries the baseline is compared with."""
    notes = []
    for entry in entries:
        failed = figures.failure(entry.data)
        if failed:
            notes.append(f"{entry.id} {failed}: never the baseline; its figures are not ranked")
        elif figures.launch_times(entry.data):
            sync = entry.get("timings.device_sync")
            notes.append(f"{entry.id}: {figures.LAUNCH_TIMES_WHY} ({sync}), so its step times and rates get no "
                         f"ratio ({figures.LAUNCH_TIMES})")  # fmt: skip
    base = entries[0]
    if figures.failure(base.data):
        return [*notes, "nothing is ranked: no entry completed with sound figures"]
    ranked = [e.id for e in entries[1:] if not figures.failure(e.data)]
    if not notes:
        return []
    if ranked:
        return [*notes, f"compared with the baseline {base.id}: {', '.join(ranked)}"]
    return [*notes, f"nothing is ranked against the baseline {base.id}: no other entry completed with sound figures"]


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
    counts = [figures.devices(entry.data) for entry in entries]
    if _differ(counts):
        lines.append(f"devices {_arrow(counts)} (throughput compared per device)")
    tags = [", ".join(sorted(entry.data.get("tags") or [])) or None for entry in entries]
    if _differ(tags):
        lines.append(f"tags {_arrow(tags)}")
    compiles = [figures.compile_kind(entry.data) for entry in entries]
    if _differ(compiles) and any(entry.get("timings.compile_s") is not None for entry in entries):
        lines.append(f"compile cache {_arrow(compiles)} (compile times compared cold with cold, warm with warm)")
    for section in DIFF_SECTIONS:
        names = sorted({name for entry in entries for name in (entry.data.get(section) or {})})
        for name in names:
            values = [(entry.data.get(section) or {}).get(name) for entry in entries]
            if _differ(values):
                lines.append(f"{name} {_arrow(values)}")
    return list(dict.fromkeys(lines))  # a setting that repeats an identity field (mode) is said once


def _timing_rows(entries: list[Entry], runs: list[list[Entry]], floor: float) -> list[Row]:
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
    counts = [figures.devices(entry.data) for entry in entries]
    compiles = [figures.compile_kind(entry.data) for entry in entries]
    for name in [*names, *extra]:
        values = [_timing(entry.data, name) for entry in entries]
        row = Row("timings", name, values, unit="s", better="lower")
        _judge(row, [[_timing(run.data, name) for run in found] for found in runs], floor)
        if name == "step_s" and _differ(counts):  # a step on 64 devices is another step than on one
            row.verdicts = ["baseline" if i == 0 else "devices differ" if v else "" for i, v in enumerate(row.verdicts)]
        if name == "compile_s" and _differ(compiles):
            row.ratios = [r if compiles[i] == compiles[0] else None for i, r in enumerate(row.ratios)]
            row.verdicts = [
                v if kind == compiles[0] else f"{kind or 'unknown'} vs {compiles[0] or 'unknown'}"
                for v, kind in zip(row.verdicts, compiles, strict=True)
            ]
        rows.append(row)
    return rows


def _timing(data: dict[str, Any], name: str) -> Any:
    value = (data.get("timings") or {}).get(name)
    return value.get("median") if isinstance(value, dict) else value


def _metric_rows(entries: list[Entry], runs: list[list[Entry]], floor: float) -> list[Row]:
    names = sorted({name for entry in entries for name in (entry.data.get("metrics") or {})})
    counts = [figures.devices(entry.data) for entry in entries]
    rows = []
    for name in names:
        metrics = [(entry.data.get("metrics") or {}).get(name) or {} for entry in entries]
        unit = next((m.get("unit") for m in metrics if m.get("unit")), None)
        better = next((m.get("better") for m in metrics if m.get("better")), None) or guess_better(name, unit)
        per_device = (name in figures.THROUGHPUT or name in figures.STEP_RATES) and _differ(counts)
        values = [_metric(entry.data, name, per_device) for entry in entries]
        row = Row("metrics", name, values, unit=f"{unit or name} per device" if per_device else unit, better=better)
        _judge(row, [[_metric(run.data, name, per_device) for run in found] for found in runs], floor)
        rows.append(row)
    return rows


def _unranked(entries: list[Entry], rows: list[Row]) -> None:
    """Figures that stand beside the baseline's with no ratio and no verdict: reported beside measured ones, a
    failed run's (partial, or wrong), and launch times beside any time (figures.ranks_with)."""
    reported = [entry.get("provenance.source") == "reported" for entry in entries]
    failed = [figures.failure(entry.data) for entry in entries]
    for row in rows:
        if row.section not in ("timings", "metrics"):
            continue
        for index in range(1, len(entries)):
            if failed[0] or failed[index]:
                status = "numerics failed" if failed[index].startswith("numerics") else entries[index].status
                why = f"{status}: not ranked" if failed[index] else "the baseline failed: not ranked"
            elif not figures.ranks_with(entries[0].data, entries[index].data, row.name):
                why = figures.LAUNCH_TIMES
            elif reported[index] != reported[0] and row.ratios[index] is not None:
                why = NOT_RANKED
            else:
                continue
            if row.values[index] is not None:
                row.ratios[index] = None
                row.verdicts[index] = why


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


def _metric(data: dict[str, Any], name: str, per_device: bool) -> Any:
    metric = (data.get("metrics") or {}).get(name)
    found = metric.get("value") if isinstance(metric, dict) else None
    return found / figures.devices(data) if per_device and figures.finite_number(found) is not None else found


def _judge(row: Row, samples: list[list[Any]], floor: float) -> None:
    """Each figure's ratio to the baseline's, and the one verdict rule on the runs behind each (n a side). An entry
    that stands for repeated runs shows their median: the figure its ratio and verdict are of."""
    for index, runs in enumerate(samples):
        pooled = verdict.finite(runs)
        if len(pooled) > 1:
            row.values[index] = statistics.median(pooled)
    base = row.values[0]
    timed = row.section == "timings" or row.name in figures.THROUGHPUT or row.name in figures.STEP_RATES
    for index, value in enumerate(row.values):
        number = figures.finite_number(value) is not None and bool(figures.finite_number(base))
        row.ratios.append(round(value / base, 4) if number else None)
        if index == 0 or not number or row.better is None:
            row.verdicts.append("baseline" if index == 0 else "")
            continue
        judged = verdict.judge(samples[0], samples[index], higher_is_better=row.better == "higher", floor=floor)
        word = {"faster": "better", "slower": "worse"}.get(judged.verdict, judged.verdict) if not timed else (
            judged.verdict)  # fmt: skip
        row.verdicts.append(f"{word} ({_footing(judged, row.better == 'higher')})")


def _footing(judged: verdict.Verdict, higher_is_better: bool) -> str:
    """The board's footing (n a side, the 95% interval, the floor), its interval turned to the table's
    ratio (this figure over the baseline's, which for a time is below 1 when faster)."""
    low, high = judged.low, judged.high
    if low is not None and high is not None and not higher_is_better:
        low, high = 1 / high, 1 / low
    interval = f", 95% interval ×{low:.3g} to ×{high:.3g}" if low is not None else ""
    why = f"; {judged.reason}" if judged.reason else ""
    return f"n={judged.n} vs {judged.n_base}{interval}, floor {judged.floor:.0%}{why}"


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


def grouped(
    kb: Any,
    db: Any,
    workload: str,
    by: str,
    where: tuple[str, list[Any]],
    *,
    baseline: str | None = None,
    incumbent: str = "",
    backend: str | None = None,
    mode: str | None = None,
    floor: float = FLOOR,
) -> Comparison:
    """The newest usable run of each group of a workload's runs, side by side, the baseline first.

    `where` narrows the runs (the filters kb ls takes). `--by mode` holds the backend fixed, `--by backend`
    the mode (the baseline's, unless given), so that each column differs from the first in one thing.
    """
    from kb.index import answers

    package = by.split(":", 1)[1] if by.startswith("version:") and len(by) > len("version:") else None
    if by not in ("backend", "mode") and package is None:
        raise KbError(f"--by {by!r}: group by {GROUPINGS}")
    rows = answers.workload_candidates(db, workload, where=where, by=by, package=package)
    if not rows:
        raise KbError(f"no runs of workload {workload!r} to compare; 'kb ls --kind run' lists the workloads")
    notes: list[str] = []
    chosen: Entry | None = kb.load(baseline) if baseline else None
    if chosen is not None and chosen.status not in USABLE_STATUSES:
        raise KbError(f"--baseline {chosen.id}: a {chosen.status} run cannot be a baseline; give a completed run")
    if chosen is not None and figures.failure(chosen.data):
        raise KbError(f"--baseline {chosen.id}: its {figures.failure(chosen.data)}; give a run whose numerics held")
    usable = [row for row in rows if _usable(row)]
    base_backend = _incumbent_backend(usable, incumbent, chosen)
    if by == "mode" and not backend and len({row["backend"] for row in rows}) > 1:
        backend = base_backend
        notes.append(f"modes compared on {backend} (--backend for another)")
    if backend:
        rows = [row for row in rows if row["backend"] == backend]
    if by == "backend":
        if len({row["backend"] for row in rows}) == 1:
            raise KbError(f"only {rows[0]['backend']} so far; try --by mode")
        mode = mode or (chosen.get("mode") if chosen else _newest_mode(usable, base_backend))
        if mode:
            notes.append(f"backends compared in {mode} mode (--mode for another)")
            rows = [row for row in rows if row["mode"] == mode]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:  # newest first
        group = figures.release_of(str(row["grp"])) if package else str(row["grp"])  # +cu126 builds: one release
        groups.setdefault(group, []).append(row)
    picked = _pick(groups, _ordered(groups, package), notes)
    entries = [Entry.read(kb.entries_path / row["path"]) for row in picked]
    if chosen is not None:
        entries = [chosen, *(e for e in entries if e.id != chosen.id)]
    elif entries:
        prefer = {"backend": (base_backend, None), "mode": (None, "eager")}.get(by, (None, None))
        entries.insert(0, entries.pop(baseline_index(picked, *prefer)))
    if len(entries) < 2:
        raise KbError("; ".join([f"nothing to compare {workload} with by {by}", *notes]))
    comparison = compare(entries, [_repeats(kb, entry, rows) for entry in entries], floor)
    comparison.notes = [*notes, *comparison.notes]
    return comparison


def _repeats(kb: Any, entry: Entry, rows: list[dict[str, Any]]) -> list[Entry]:
    """The entry and the runs that repeat it: completed, with figures, of its backend and mode, on its shapes,
    device count, hardware and versions, with its kind of time (device or launch), not on a busy machine (unless
    it was itself)."""
    if entry.kind != "run":
        return [entry]
    like = _setup(entry.data)
    found = [entry]
    for row in rows:
        if row["id"] == entry.id or not _usable(row) or row["kind"] != "run":
            continue
        if (row["backend"], row["mode"]) != (entry.get("backend"), entry.get("mode")):
            continue
        other = Entry.read(kb.entries_path / row["path"])
        if _setup(other.data) == like and (figures.busy(entry.data) or not figures.busy(other.data)):
            found.append(other)
    return found


def _setup(data: dict[str, Any]) -> tuple[Any, ...]:
    """The run's configuration (figures.configuration), with what a comparison of two runs also holds fixed: the
    release of each package and the compile's cache state (cold and warm compile times are other figures)."""
    versions = {k: figures.release_of(str(v)) for k, v in (data.get("versions") or {}).items()}
    return figures.configuration(data), versions, figures.compile_kind(data)


def newest_usable(kb: Any, db: Any, workload: str, incumbent: str = "") -> tuple[list[Entry], list[str]]:
    """The newest usable run or report of each backend and mode of a workload, the baseline first (by the
    rule `grouped` follows), with a line for each backend and mode that has none: a site's comparison page."""
    from kb.index import answers

    rows = answers.workload_candidates(db, workload)
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:  # newest first
        groups.setdefault(f"{row['backend']} · {row['mode'] or '-'}", []).append(row)
    notes: list[str] = []
    picked = _pick(groups, sorted(groups), notes)
    if not picked:
        return [], notes
    backend = _incumbent_backend([r for r in rows if _usable(r)], incumbent, None)
    entries = [Entry.read(kb.entries_path / row["path"]) for row in picked]
    entries.insert(0, entries.pop(baseline_index(picked, backend, incumbent_of(incumbent)[1] or "eager")))
    entries.insert(0, entries.pop(_sound_first(entries)))  # as compare() orders them: the page's columns too
    return entries, notes


def _usable(row: dict[str, Any]) -> bool:
    return row["status"] in USABLE_STATUSES and bool(row["has_figures"])


def _pick(groups: dict[str, list[dict[str, Any]]], order: list[str], notes: list[str]) -> list[dict[str, Any]]:
    """Each group's newest usable run (its rows newest first); a group without one is named in `notes`."""
    picked = []
    for group in order:
        found = next((row for row in groups[group] if _usable(row)), None)
        if found is None:
            states = Counter(str(r["status"]) for r in groups[group])
            notes.append(f"{group}: no usable run ({', '.join(f'{n} {s}' for s, n in sorted(states.items()))})")
        else:
            picked.append(found)
    return picked


def incumbent_of(incumbent: str) -> tuple[str | None, str | None]:
    """kb.toml's `[answers] incumbent` (`cuda`, `cuda compiled` or `cuda · compiled`) as (backend, mode)."""
    backend, _, mode = incumbent.replace("·", " ").strip().partition(" ")
    return backend or None, mode.strip() or None


def _incumbent_backend(rows: list[dict[str, Any]], incumbent: str, chosen: Entry | None) -> str | None:
    """The baseline's backend: the chosen run's, else the incumbent's where it has usable runs, else the
    backend with the most."""
    if chosen is not None:
        return chosen.get("backend")
    wanted = incumbent_of(incumbent)[0]
    backends = Counter(row["backend"] for row in rows if row["kind"] == "run")
    if wanted and wanted in backends:
        return wanted
    return min(backends, key=lambda b: (-backends[b], str(b))) if backends else None


def _newest_mode(rows: list[dict[str, Any]], backend: str | None) -> str | None:
    return next((row["mode"] for row in rows if row["backend"] == backend and row["kind"] == "run"), None)


def _ordered(groups: dict[str, list[dict[str, Any]]], package: str | None) -> list[str]:
    if package is None:
        return sorted(groups)
    from kb.index.query import version_key

    return sorted(groups, key=version_key)


def baseline_index(picked: list[dict[str, Any]], backend: str | None, mode: str | None) -> int:
    """Which picked run is the baseline: measured before reported, then the wanted backend, then the wanted
    mode (eager, or the incumbent's), else the first in order (the oldest version)."""

    def rank(item: tuple[int, dict[str, Any]]) -> tuple:
        index, row = item
        return (row["kind"] != "run", backend is not None and row["backend"] != backend,
                mode is not None and row["mode"] != mode, index)  # fmt: skip

    return min(enumerate(picked), key=rank)[0]


@dataclass
class Agreement:
    """How a rerun agrees with the run it repeats, by the one verdict rule: each side with its repeats."""

    original: str
    rerun: str
    reproduction: bool  # another author or another host (its name on its hardware) ran it
    who: str  # "bo on vm2, ana on vm before"
    figure: str | None = None
    verdict: dict[str, Any] | None = None  # kb.answers.verdict.Verdict
    outcome: str = ""  # agrees, disagrees or undecided (`agreement_of`)
    original_runs: list[str] = field(default_factory=list)
    rerun_runs: list[str] = field(default_factory=list)
    reason: str = ""  # why there is no verdict

    def text(self) -> str:
        kind = "reproduction attempt" if self.reproduction else "repeat (same author, same host)"
        head = f"{kind} of {self.original} by {self.who}: "
        if self.verdict is None:
            return head + f"no agreement verdict: {self.reason}"
        return head + f"{self.figure} {self.outcome}, {verdict.Verdict(**self.verdict).text()}"


def agreement_of(
    first: list[float], second: list[float], name: str, floor: float = FLOOR
) -> tuple[str, verdict.Verdict]:
    """Whether the runs `second` reproduce the figure `name` of the runs `first`, by the one verdict rule: `agrees`
    (equivalent within the floor), `disagrees` (faster or slower) or `undecided` (inconclusive: one run a side
    always is), with the verdict behind the word. kb rerun's agreement and the board's reproduction line."""
    judged = verdict.judge(first, second, higher_is_better=name in figures.THROUGHPUT, floor=floor)
    return {"equivalent": "agrees", "inconclusive": "undecided"}.get(judged.verdict, "disagrees"), judged


def agreement(kb: Any, db: Any, original: Entry, rerun: Entry, floor: float = FLOOR) -> Agreement:
    """The rerun (with the earlier reruns of the original by the same author on the same host and setup) against
    the original (with its repeats by its author on its host that are no reruns of it): the headline figure both
    have, judged by the one rule."""
    from kb.index import answers

    found = Agreement(original.id, rerun.id, _who(original) != _who(rerun), _said_who(rerun, original))
    failed = figures.failure(rerun.data) or figures.failure(original.data)
    if failed:
        which = rerun if figures.failure(rerun.data) else original
        found.reason = f"{which.id} {figures.failure(which.data)}"
        return found
    rows = answers.workload_candidates(db, original.get("workload.name"), original.get("backend"), original.get("mode"))

    def reran(entry: Entry) -> bool:
        return (entry.data.get("links") or {}).get("rerun_of") == original.id

    before = [e for e in _repeats(kb, original, rows) if e.id == original.id or (
        _who(e) == _who(original) and not reran(e))]  # fmt: skip
    now = [e for e in _repeats(kb, rerun, rows) if e.id == rerun.id or (_who(e) == _who(rerun) and reran(e))]
    found.original_runs, found.rerun_runs = [e.id for e in before], [e.id for e in now]
    both = [n for n in figures.HEADLINES if figures.headline(original.data, n) and figures.headline(rerun.data, n)]
    name = both[0] if both else None
    if name is None:
        found.reason = "no headline figure (throughput or step time) in both"
        return found
    if not figures.ranks_with(original.data, rerun.data, name):
        found.reason = f"{name}: {figures.LAUNCH_TIMES}"
        return found
    values = [[f.value for f in (figures.headline(e.data, name) for e in side) if f] for side in (before, now)]
    found.figure = name
    found.outcome, judged = agreement_of(*values, name, floor)
    found.verdict = judged.as_dict()
    return found


def _who(entry: Entry) -> tuple[Any, Any, Any]:
    """Who ran a run where: its author, host name and hardware."""
    return entry.get("author"), entry.get("hardware.hostname"), figures.machine(entry.data)


def _said_who(rerun: Entry, original: Entry) -> str:
    def one(entry: Entry) -> str:
        return f"{entry.get('author') or 'an unknown author'} on {entry.get('hardware.hostname') or 'an unknown host'}"

    now, then = one(rerun), one(original)
    if now == then and figures.machine(rerun.data) != figures.machine(original.data):
        now += " (other hardware)"
    return now if now == then else f"{now} ({then} before)"
