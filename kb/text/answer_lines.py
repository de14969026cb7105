"""The answers for a terminal (80 columns, plain lines) and as Markdown (a review, a wiki): the board, its
checklist, a decision's revisit state, regressions and expectations."""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import TYPE_CHECKING, Any

from kb.text.humanize import duration, number

if TYPE_CHECKING:  # `kb board` prints without importing decisions, expectations and regressions
    from kb.answers.board import Board, Cell, WorkloadBoard
    from kb.answers.decisions import DecisionState
    from kb.answers.expectations import Outcome
    from kb.answers.figures import Figure
    from kb.answers.regressions import Regressions
    from kb.answers.summary import BackendSummary, Summary
    from kb.answers.trend import Trend

WIDTH = 80
COLUMNS = (("backend · mode", 22), ("figure", 20), ("vs base", 10), ("numerics", 10), ("done", 6))
SHORT_UNITS = {"tokens/s": "tok/s", "samples/s": "smp/s"}


def figure_text(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    if figure.name == "step_s":
        return f"{duration(figure.value)}/step"
    if figure.name == "compile_s":
        return f"compile {duration(figure.value)}"
    unit = SHORT_UNITS.get(figure.unit, figure.unit)
    return f"{number(figure.value)} {unit}" + ("/dev" if figure.devices > 1 else "")


def ratio_text(cell: Cell) -> str:
    if cell.verdict == "baseline":
        return "baseline"
    if cell.verdict == "numerics failed":
        return "×0 (num.)"
    if cell.ratio is None:
        return "-"
    if cell.verdict != "counted":
        return f"×{cell.ratio:.3g}?"
    unsure = (cell.comparison or {}).get("verdict") == "inconclusive"
    return f"×{cell.ratio:.3g}" + ("~" if unsure else "")


def footing_text(cell: Cell) -> str:
    """`5 runs, 4,800-5,200 tok/s; torch 2.13.0, 2026-12-06`: what the cell's figure stands on."""
    if cell.figure is None:
        return ""
    low, high = cell.spread or (cell.figure.value, cell.figure.value)
    spread = "" if cell.n < 2 else f", {_figure_value(cell.figure, low)} to {_figure_value(cell.figure, high)}"
    where = ", ".join(part for part in (cell.release, cell.evidence_date) if part)
    busy = "; all on a busy machine" if cell.busy_only else f"; {cell.busy} busy kept out" if cell.busy else ""
    return f"{cell.n} run{'s' if cell.n != 1 else ''}{spread}" + (f"; {where}" if where else "") + busy


def _figure_value(figure: Figure, value: float) -> str:
    return duration(value) if figure.name == "step_s" else number(value)


def comparison_text(cell: Cell) -> str:
    """The verdict against the baseline with its footing, where the cell was compared."""
    if not cell.comparison:
        return ""
    from kb.answers.verdict import Verdict

    return "vs baseline: " + Verdict(**cell.comparison).text()


def run_texts(cell: Cell) -> tuple[str, str]:
    """The numerics verdict and whether the work stayed on the accelerator: `-` where no run was picked."""
    return (cell.numerics, cell.stayed) if cell.figure else ("-", "-")


def compile_text(cell: Cell) -> str:
    if cell.cold_compile is None and cell.warm_compile is None:
        other = cell.other_compile
        return f"{duration(other['seconds'])} ({other['cache']})" if other else "-"
    parts = [duration(c["seconds"]) if c else "-" for c in (cell.cold_compile, cell.warm_compile)]
    return " / ".join(parts)


def _row(values: list[str]) -> str:
    cells = [value.ljust(width)[:width] if i < len(values) - 1 else value for i, (value, (_, width)) in
             enumerate(zip(values, COLUMNS, strict=True))]  # fmt: skip
    return "  " + " ".join(cells).rstrip()


def _clip(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def board_lines(result: Board) -> list[str]:
    if not result.workloads:
        return ["No runs yet: record one with kb record --workload NAME --backend NAME -- python train.py"]
    lines: list[str] = textwrap.wrap(result.guessed, WIDTH) + ([""] if result.guessed else [])
    for workload in result.workloads:
        lines += [*_workload_lines(workload), ""]
    lines += [
        "×N?: numerics unchecked, so not counted; ×0 (num.): numerics failed;",
        "×N~: inconclusive (too few runs, or the interval straddles the floor).",
        "Figures: the median of the current release's repeated runs, per device;",
        f"verdicts from n runs each side, with a floor of {result.floor:.0%}: faster, slower,",
        "equivalent within the floor, or inconclusive. Busy-machine runs are kept out.",
        "Reported figures and launch times (nothing waited for the device) are never",
        "ranked.",
    ]
    return lines


def _workload_lines(workload: WorkloadBoard) -> list[str]:
    base = f"baseline {workload.baseline} ({workload.baseline_reason})" if workload.baseline else "no baseline"
    lines = textwrap.wrap(f"{workload.workload}: {base}", WIDTH, subsequent_indent="    ")
    lines += textwrap.wrap(f"answer: {workload.best}", WIDTH, initial_indent="  ", subsequent_indent="    ")
    lines.append(_row([name for name, _ in COLUMNS]))
    reported = {(report.backend, report.mode) for report in workload.reported}
    for cell in workload.cells:
        done = f"{cell.completed}/{cell.tried}"
        lines.append(_row([cell.label, figure_text(cell.figure), ratio_text(cell), run_texts(cell)[0], done]))
        said_below = cell.tried == 0 and (cell.backend, cell.mode) in reported  # its reported line says it
        for line in _details(cell, said_below):
            lines += textwrap.wrap(line, WIDTH, initial_indent="    ", subsequent_indent="      ")
    for report in workload.reported:
        label = f"{report.backend} · {report.mode}" if report.mode else report.backend
        said = f"reported, not ranked: {label} {figure_text(report.figure)} ({report.publisher or '?'})"
        lines += textwrap.wrap(said, WIDTH, initial_indent="  ", subsequent_indent="      ")
        lines.append(f"    {report.entry}")
    for tested in workload.coverage:
        lines += textwrap.wrap(f"test coverage on {tested['backend']}: {tested['text']}", WIDTH, initial_indent="  ",
                               subsequent_indent="      ")  # fmt: skip
        lines.append(f"    {tested['entry']}")
    return lines


def _details(cell: Cell, said_below: bool) -> list[str]:
    lines = []
    if cell.note:
        if not said_below:
            lines.append(cell.note)
    elif cell.verdict not in ("baseline", "counted", "unchecked", "numerics failed"):
        lines.append(cell.verdict)
    elif cell.differences:
        lines.append("; ".join(cell.differences))
    if cell.other_compile and not (cell.cold_compile or cell.warm_compile):
        other = cell.other_compile
        lines.append(f"compile: {duration(other['seconds'])}, cache {other['cache']}: tag runs cold or warm to tell")
    if cell.cold_compile or cell.warm_compile:
        cold, warm = (duration(c["seconds"]) if c else "not measured" for c in (cell.cold_compile, cell.warm_compile))
        lines.append(f"compile: cold {cold}, warm {warm}")
    if cell.numerics_note:
        lines.append(f"numerics failed: {cell.numerics_note}")
    if cell.figure is not None:
        lines.append(footing_text(cell))
        lines.append(comparison_text(cell))
        if cell.reproduction:
            lines.append(cell.reproduction)
        lines.append(f"on accelerator: {cell.stayed}; run {cell.figure.entry}")
    if cell.failure:
        message = " ".join(str(cell.failure["message"] or "").split())
        lines.append(
            f"failures: {cell.failure['class']} ×{cell.failure['count']}" + (f": {message}" if message else "")
        )
    return lines


def missing_lines(result: Board) -> list[str]:
    """The checklist: for each cell, what is missing before its result can be believed."""
    lines: list[str] = []
    for workload in result.workloads:
        for cell in workload.cells:
            done = sum(1 for check in cell.checklist if check.ok is True)
            asked = sum(1 for check in cell.checklist if check.ok is not None)
            lines.append(_clip(f"{workload.workload} on {cell.label}: {done} of {asked} answered"))
            for check in cell.checklist:
                mark = {True: "yes", False: "NO ", None: "n/a"}[check.ok]
                lines.append(_clip(f"  {mark} {check.question}"))
                if check.detail:
                    lines += textwrap.wrap(check.detail, WIDTH, initial_indent="      ", subsequent_indent="        ")
                if check.evidence:
                    lines.append(f"      {check.evidence}")
            lines.append("")
    return lines or ["No runs yet: nothing to check."]


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def board_markdown(result: Board) -> str:
    lines: list[str] = []
    for workload in result.workloads:
        base = f"baseline `{workload.baseline}` ({workload.baseline_reason})" if workload.baseline else "no baseline"
        lines += [f"### {_md(workload.workload)}", "", f"{_md(base)}. **Answer:** {_md(workload.best)}", ""]
        lines += ["| backend · mode | figure | vs baseline | numerics | compile cold / warm | completed "
                  "| on accelerator | common failure | run |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for cell in workload.cells:
            failure = f"{cell.failure['class']} ×{cell.failure['count']}" if cell.failure else ""
            run = f"`{cell.figure.entry}`" if cell.figure else _md(cell.note or cell.verdict)
            ratio = ratio_text(cell) if cell.verdict in ("baseline", "counted", "unchecked", "numerics failed") else (
                _md(cell.verdict) if cell.figure else "-")  # fmt: skip
            numerics, stayed = run_texts(cell)
            lines.append("| " + " | ".join([_md(cell.label), figure_text(cell.figure), ratio, numerics,
                                            compile_text(cell), f"{cell.completed}/{cell.tried}", stayed,
                                            _md(failure), run]) + " |")  # fmt: skip
        if workload.reported:
            lines += ["", "Reported (not measured here, not ranked):", ""]
            for report in workload.reported:
                label = f"{report.backend} · {report.mode}" if report.mode else report.backend
                lines.append(
                    f"- {_md(label)}: {figure_text(report.figure)}, {_md(report.publisher or '?')} (`{report.entry}`)"
                )
        if workload.coverage:
            lines += ["", "Test coverage:", ""]
            lines += [f"- {_md(t['backend'])}: {_md(t['text'])} (`{t['entry']}`)" for t in workload.coverage]
        lines.append("")
    return "\n".join(lines) or "No runs yet."


def decision_lines(state: DecisionState) -> list[str]:
    """Whether a decision is due, why, and where each trigger stands now."""
    from kb.answers.decisions import OPEN_STATUSES

    if state.untriggered:
        head = "Revisit: no trigger; it never comes due by itself (kb decide --supersedes to add some)"
    elif state.due:
        head = "Revisit: DUE"
    elif state.status not in OPEN_STATUSES:
        head = f"Revisit: not checked ({state.status})"
    else:
        head = "Revisit: not due"
    lines = [head]
    for trigger in state.triggers:
        mark = "fired" if trigger.fired else "quiet"
        lines.append(f"  {mark}  {trigger.text}")
        for detail in (trigger.reason, trigger.current if trigger.current != trigger.reason else None):
            if detail:
                lines += textwrap.wrap(detail, WIDTH, initial_indent="         ", subsequent_indent="           ")
    review = state.last_review
    if review:
        who = f" by {review['by']}" if review.get("by") else ""
        lines.append(f"  last reviewed {str(review.get('date'))[:10]}{who}: {review.get('note')}")
    return lines


def regression_lines(found: Regressions) -> list[str]:
    """What stopped working across releases, then what got slower: two lists, never mixed; lines wrap."""

    def wrapped(text: str, indent: int = 2) -> list[str]:
        return textwrap.wrap(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + 4),
                             break_long_words=False, break_on_hyphens=False)  # fmt: skip

    lines = ["Stopped working (completed on the older release, fails on the newer):"]
    for item in found.breakages:
        where = f"{item.workload} on {item.backend}" + (f" · {item.mode}" if item.mode else "")
        lines += wrapped(f"{where}: {item.package} {item.before} -> {item.after}: {item.failure}")
        for case in item.cases[:10]:
            lines += wrapped(case, 6)
        lines.append(f"    was {item.passed_entry}")
        lines.append(f"    now {item.failed_entry}")
    if not found.breakages:
        lines.append("  none")
    lines += ["", "Slower (where each series changed across releases, beyond the floor):"]
    for slow in found.slowdowns:
        said = (f"{slow.workload} {slow.figure} on {slow.label()}: {slow.package} {slow.last_good} -> "
                f"{slow.first_bad} {slow.change:+.1%}")  # fmt: skip
        lines += wrapped(said)
        from kb.answers.verdict import Verdict

        lines += wrapped(f"{Verdict(**slow.comparison).text()}, t-test p={slow.pvalue:.2g}", 6)
    if not found.slowdowns:
        lines.append("  none")
    return lines


def expectation_lines(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for outcome in outcomes:
        where, bound, actual = expectation_parts(outcome)
        said = f"{outcome.verdict.upper():<9}{where}: {bound}, {actual}"
        lines += textwrap.wrap(said, WIDTH, subsequent_indent=" " * 11)
        for note in outcome.notes:
            lines += textwrap.wrap(note, WIDTH, initial_indent=" " * 9, subsequent_indent=" " * 11)
        if outcome.entry:
            lines.append(f"         {outcome.entry}")
    return lines


def expectation_parts(outcome: Outcome) -> tuple[str, str, str]:
    """(where, the bound, what the evidence says now) of one expectation, as kb expect and the site word them."""
    from kb.text.humanize import field, unit_of

    item = outcome.expectation
    where = f"{item.workload} on {item.backend}" + (f" · {item.mode}" if item.mode else "")
    if item.bound is None:
        bound = f"{item.figure} must pass"
    else:  # the bound as the file has it, in the figure's unit; the evidence humanised
        unit = unit_of(item.figure)
        written = int(item.bound) if float(item.bound).is_integer() else item.bound
        bound = f"{item.figure} {'<=' if item.kind == 'max' else '>='} {written}" + (f" {unit}" if unit else "")
    if outcome.actual is not None:
        pooled = f" (median of {outcome.n} runs, {outcome.noise:.0%} apart)" if outcome.n > 1 else ""
        left_out = f"; {outcome.left_out} left out" if outcome.left_out else ""
        actual = f"now {field(item.figure, outcome.actual)}{pooled}{left_out}"
    else:
        actual = outcome.reason or "no evidence"
    return where, bound, actual


def trend_lines(result: Trend, workload: str) -> list[str]:
    """A series per program, a line per release: its median, n, date, the change against the release before
    and the verdict on it (the flag and the number from the same figure); long lines wrap."""
    from kb.text.humanize import field

    whole = {"width": WIDTH, "break_long_words": False, "break_on_hyphens": False}  # a version is never cut
    head = f"{result.metric} of {workload} across {result.package} versions ({result.better} is better)"
    lines = textwrap.wrap(head, **whole)
    said = f"changes located across releases, each judged on the runs either side: floor {result.floor:.0%}"
    lines += textwrap.wrap(said, **whole)
    if result.busy:
        lines += textwrap.wrap(
            f"({result.busy} run{'s' if result.busy > 1 else ''} on a busy machine left out)", **whole
        )
    # Figures right-aligned in one column across the series; a note most releases share is said once per series.
    width = max((len(field(result.metric, p.value)) for series in result.series for p in series.points), default=0)
    for series in result.series:
        lines += ["", *textwrap.wrap(f"{series.group or 'all'}  {series.sparkline()}", **whole)]
        notes = Counter(point.note for point in series.points if point.note and not point.flag)
        shared = {note for note, count in notes.items() if count > 1}
        for point in series.points:
            change = "" if point.change is None else f"{point.change:+.1%} vs {point.previous}"
            own = point.note if point.note not in shared else ""
            flag = point.flag.upper() if point.flag else f"({own})" if own else ""
            figure = field(result.metric, point.value)
            said = f"  {point.version:<12} {figure:>{width}}  n={point.count:<3} {point.last}"
            lines += _phrases([said, change, flag], "      ")
            if point.flag and point.comparison:
                from kb.answers.verdict import Verdict

                lines += textwrap.wrap(Verdict(**point.comparison).text(), initial_indent="      ",
                                       subsequent_indent="        ", **whole)  # fmt: skip
            builds = [label for label in point.labels if label != point.version]
            if builds:
                lines += textwrap.wrap(f"builds: {', '.join(builds)}", initial_indent="    ", **whole)
        others = any(point.flag or (point.note and point.note not in shared) for point in series.points)
        for note in sorted(shared):
            said = f"({note}{' at the other releases' if others else ''})"
            lines += textwrap.wrap(said, initial_indent="  ", subsequent_indent="   ", **whole)
    if result.skipped:
        plural = "ies" if result.skipped > 1 else "y"
        lines += ["", f"({result.skipped} entr{plural} without a {result.package} version left out)"]
    if result.unfinished:
        lines.append(f"({result.unfinished} run{'s' if result.unfinished > 1 else ''} that did not complete left out)")
    return lines


def _phrases(phrases: list[str], indent: str) -> list[str]:
    """Phrases joined two spaces apart on lines of WIDTH, a phrase moved whole to the next line where it does not fit
    (a release and its change are never cut apart); a phrase longer than a line is wrapped at its spaces."""
    lines: list[str] = []
    for phrase in filter(None, phrases):
        joined = f"{lines[-1]}  {phrase}" if lines else phrase
        if len(joined) <= WIDTH:
            lines[-1:] = [joined]
        else:
            lines += textwrap.wrap(phrase, WIDTH, initial_indent=indent, subsequent_indent=indent,
                                   break_long_words=False, break_on_hyphens=False)  # fmt: skip
    return lines


def summary_lines(found: Summary, board: Board) -> list[str]:
    """Per backend and mode across the workloads: pass rate, geomean speed-up with its interval, compile, peak
    memory; then the same per release of the backend's package."""
    from kb.text.humanize import field

    floor = board.floor

    if not found.rows:
        return ["No runs yet: nothing to summarise."]

    def rate(completed: int, tried: int) -> str:
        return f"{completed}/{tried} {completed / tried:.0%}" if tried else "-"

    def speed(geomean: float | None, low: float | None, high: float | None, counted: int) -> str:
        if geomean is None:
            return "-"
        interval = f" [{low:.3g}, {high:.3g}]" if low is not None else ""
        return f"×{geomean:.3g}{interval} n={counted}"

    lines = [f"{'backend · mode':<20} {'passed':>14}  {'speed-up (geomean)':<24} {'compile cold/warm':<17}"]
    for row in found.rows:
        # A line breaks between the speed-up and the compile's pieces, never inside one ("2 min 10 s /", "45.2 s").
        compiles = " ".join(_unbroken(part) for part in summary_compile_parts(row))
        shown = _unbroken(speed(row.geomean, row.low, row.high, row.counted))
        said = f"{row.label:<20} {rate(row.completed, row.tried):>14}  {shown:<24} {compiles}"
        lines += [line.replace(_NO_BREAK, " ") for line in textwrap.wrap(
            said, WIDTH, subsequent_indent=" " * 4, break_long_words=False, break_on_hyphens=False)]  # fmt: skip
        # The release the board's figures stand on (its current one); the lines below it, every release run.
        current = "current release" if len(row.releases) == 1 else "current releases"
        releases = f"; figures on the {current} {', '.join(row.releases)}" if row.releases else ""
        lines += textwrap.wrap(f"{row.workloads} workload{'s' if row.workloads != 1 else ''}{releases}", WIDTH,
                               initial_indent=" " * 4, subsequent_indent=" " * 6, break_long_words=False,
                               break_on_hyphens=False)  # fmt: skip
        if row.peak_memory_gb is None:
            lines.append("    peak memory not recorded")
        else:
            lines.append(f"    peak memory {field('peak_gb', row.peak_memory_gb)} (the median of "
                         f"{row.memory_workloads} workload{'s' if row.memory_workloads != 1 else ''})")  # fmt: skip
        if row.rerun_due:
            lines.append(f"    {row.rerun_due} workload{'s' if row.rerun_due != 1 else ''} due a rerun on the newest "
                         "release")  # fmt: skip
        for step in row.history if len(row.history) > 1 else []:
            said = (f"{step.release:<24} {rate(step.completed, step.tried):>10}  "
                    f"{speed(step.geomean, step.low, step.high, step.counted)}")  # fmt: skip
            lines += textwrap.wrap(said, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 8,
                                   break_long_words=False, break_on_hyphens=False)  # fmt: skip
    said = ("passed: runs completed of tried, every workload. speed-up: the geometric mean over the workloads "
            "whose speed-up over the baseline counted (numerics passed, comparable), with its 95% interval over "
            f"the workloads (from 3) and n; verdicts with a floor of {floor:.0%}. Compile and peak memory: the "
            "median over the workloads (as the board gives them: cold / warm, else untagged with its cache). "
            "Indented below a backend with runs on several releases: each release of "
            "its package, its runs completed of tried and its speed-up over the baseline's figure now. Due a rerun: "
            "workloads whose evidence is older than the newest release, or failed on it.")  # fmt: skip
    lines += ["", *textwrap.wrap(said, WIDTH)]
    return lines


_NO_BREAK = "\u00a0"  # a space textwrap does not break at


def _unbroken(text: str) -> str:
    return text.replace(" ", _NO_BREAK)


def summary_compile_parts(row: BackendSummary) -> list[str]:
    """The summary's compile in the pieces a narrow column may break between, joined by spaces as the terminal
    prints it: `12 s /` `3 s` (cold / warm), or where no run is tagged either the untagged one and its cache,
    `2.5 s` `(unknown)`."""
    if row.cold_compile_s is None and row.warm_compile_s is None and row.other_compile_s is not None:
        return [duration(row.other_compile_s), f"({row.other_compile_cache})"]
    return [f"{duration(row.cold_compile_s)} /", duration(row.warm_compile_s)]
