"""Entries for people: rich text in the terminal. Commands call these with data, never the other way round.

Every text that came from a run, a file or a person is data here: it goes into `Text` objects (never a
markup string, so `[/...]` in a message is printed, not parsed) and through `safe()`, which makes every
control character visible (an ESC from an entry never reaches the reader's terminal).

In a terminal, tables fit its width (titles are cut last, with an ellipsis); in a pipe, lists are one
tab-separated line per row, without padding or wrapping, so `grep`, `cut` and `awk` see whole rows
(kb.terminal.plain writes those: a command whose output goes to no terminal does not import this).
"""

from __future__ import annotations

import io
import sys
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from kb.model.entry import Entry
from kb.model.ids import short_id
from kb.terminal.plain import STATUS_STYLE, kind_label, list_columns, reported_style, safe
from kb.text import humanize
from kb.text.sections import IDENTITY, SECTIONS, flatten

COMPARISON_WIDTH = 80  # kb compare's lines of prose (verdicts, the noise footer), in a terminal and a pipe alike
PIPE_WIDTH = 1000  # a document (kb show, kb compare) in a pipe: wide enough that nothing folds; lines are stripped
MIN_TITLE = 28  # columns kept for a title before other columns are left out
GAP = "  "
HEADLINE_STYLE = {"failure": "red", "why": "red", "environment": "yellow", "reported": "yellow"}


def data(text: Any, style: str = "", *, one_line: bool = True) -> Text:
    """A Text holding entry text as it is (no markup), made safe for a terminal."""
    return Text("-" if text is None else safe(text, one_line=one_line), style=style)


def is_terminal() -> bool:
    return console().is_terminal


def console() -> Console:
    return Console(highlight=False)


def emit(renderable: RenderableType, width: int | None = None) -> None:
    """Print for a person: at the terminal's width there; in a pipe, at a width nothing folds at, each
    line stripped of the padding tables add. `width` caps both (a table of prose that must fit 80 columns)."""
    terminal = console()
    if terminal.is_terminal:
        if width is not None and terminal.width > width:
            terminal = Console(highlight=False, width=width)
        terminal.print(renderable)
        return
    wide = Console(width=width or PIPE_WIDTH, file=io.StringIO(), color_system=None, highlight=False)
    wide.print(renderable)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in wide.file.getvalue().splitlines()))  # type: ignore[attr-defined]


def emit_table(db: Any, rows: list[dict[str, Any]], table: Callable[[Callable[[str], str]], RenderableType]) -> None:
    """A list in a terminal (kb.terminal.plain writes it for a pipe): `table` with short ids, whole where a suffix
    is shared."""
    from functools import partial

    from kb.index.short import clashing_suffixes

    rendered = table(partial(short_id, clashing=clashing_suffixes(db, [row["id"] for row in rows])))
    # A table of lines made to fit needs no wrapping, which costs Rich more than building it (snippets do wrap).
    console().print(rendered, soft_wrap=isinstance(rendered, Text))


def status_text(status: str | None) -> Text:
    return data(status or "", STATUS_STYLE.get(status or "", ""))


def kind_text(kind: str, source: str | None) -> Text:
    """The kind, with reported figures marked so they are never read as measured ones."""
    return data(kind_label(kind, source), reported_style(source))


# Lists: kb ls and kb search


def rows_table(rows: list[dict[str, Any]], sorted_by: str | None = None, *, short: Callable[[str], str] = short_id,
               width: int | None = None) -> Text:  # fmt: skip
    """Index rows as a table that fits `width`: short ids, the title last and cut, not wrapped; columns
    that no row fills are left out, and the least telling ones too when the width runs short."""
    width = width or console().width
    every = list_columns(sorted_by, short)
    all_cells = [[_cut(data(c.text(row), c.style(row)), c.limit) for c in every] for row in rows]
    filled = [n for n in range(len(every)) if any(row_cells[n].plain for row_cells in all_cells)]
    columns = [every[n] for n in filled]
    cells = [[row_cells[n] for n in filled] for row_cells in all_cells]
    widths = [max([len(c.header), *(row_cells[n].cell_len for row_cells in cells)]) for n, c in enumerate(columns)]
    keep = list(range(len(columns)))
    while sum(widths[i] for i in keep) + len(GAP) * len(keep) + MIN_TITLE > width:
        droppable = [i for i in keep if columns[i].drop]
        if not droppable:
            break
        keep.remove(min(droppable, key=lambda i: columns[i].drop))
    title_width = max(1, width - sum(widths[i] for i in keep) - len(GAP) * len(keep))
    lines = [_line([Text(columns[i].header, "bold") for i in keep], [widths[i] for i in keep], Text("title", "bold"),
                   title_width)]  # fmt: skip
    for row, row_cells in zip(rows, cells, strict=True):
        lines.append(_line([row_cells[i] for i in keep], [widths[i] for i in keep], data(row["title"]), title_width))
    return Text("\n").join(lines)


def _cut(text: Text, limit: int) -> Text:
    if limit and text.cell_len > limit:
        text = text.copy()
        text.truncate(limit, overflow="ellipsis")
    return text


def _line(cells: list[Text], widths: list[int], title: Text, title_width: int) -> Text:
    line = Text()
    for cell, cell_width in zip(cells, widths, strict=True):
        line.append_text(cell)
        line.append(" " * (cell_width - cell.cell_len) + GAP)
    title = title.copy()
    title.truncate(title_width, overflow="ellipsis")
    line.append_text(title)
    return line


def search_results(results: list[tuple[Any, dict[str, Any]]], *, short: Callable[[str], str] = short_id,
                   width: int | None = None) -> Group:  # fmt: skip
    """Each hit, best first: id, status and where it ran; the title (cut to the width); the snippet."""
    width = width or console().width
    parts: list[Any] = []
    for hit, row in results:
        where = " ".join(safe(v, one_line=True) for v in (row["backend"], row["workload"], row["mode"]) if v)
        marks = [status_text(row["status"]) if row["status"] else None,
                 Text("reported", "yellow") if row.get("source") == "reported" else None,
                 Text(where) if where else None]  # fmt: skip
        head = Text("  ").join([data(short(row["id"]), "bold"), *(mark for mark in marks if mark is not None)])
        title = data(row["title"])
        for line in (head, title):
            line.truncate(width, overflow="ellipsis")
        parts += [head, title, snippet_text(hit.snippet), Text("")]
    return Group(*parts)


def snippet_text(snippet: str) -> Text:
    """A search snippet, its matched words (marked **like this**) in bold and the rest exactly as written."""
    text = Text()
    for index, piece in enumerate(snippet.split("**")):
        text.append(safe(piece, one_line=True), style="bold" if index % 2 else "")
    return text


# One entry: kb show


def _joined(facts: list[str], width: int, taken: int) -> str:
    """`facts` joined by " · ", a fact that would pass `width` begun on a line of its own (`taken`: the columns the
    first line already holds), so that a long author or tag list never breaks inside a name."""
    lines: list[str] = []
    line, used = "", taken
    for fact in facts:
        joined = f"{line} · {fact}" if line else fact
        if line and used + len(joined) + len(" ·") > width:
            lines.append(line + " ·")
            line, used = fact, 2
        else:
            line = joined
    return "\n  ".join([*lines, line])


def entry_view(entry: Entry, *, everything: bool = False, short: Callable[[str], str] = short_id,
               width: int | None = None, progress: list[tuple[str, str]] | None = None) -> Group:  # fmt: skip
    """The answer first (headline), then a running run's `progress`, readable sections, then the notes; every
    field with `everything`."""
    from kb.text.headline import Records, headline, sections

    width = width or (console().width if is_terminal() else PIPE_WIDTH)
    d = entry.data
    source = (d.get("provenance") or {}).get("source")
    where = [
        safe(v, one_line=True) for v in ((d.get("workload") or {}).get("name"), d.get("backend"), d.get("mode")) if v
    ]
    facts = [*where, f"recorded {safe(entry.recorded)}"]
    facts += [f"by {safe(d['author'], one_line=True)}"] if d.get("author") else []
    facts += ["tags " + ", ".join(safe(t, one_line=True) for t in d["tags"])] if d.get("tags") else []
    head = Text.assemble(
        data(entry.title, "bold"), "\n", data(short(entry.id), "bold"),
        *(("  ", data(entry.id, "dim")) if short(entry.id) != entry.id else ()), "\n",
        *((status_text(entry.status), "  ") if entry.status else ()), kind_text(entry.kind, source), "  ",
        (_joined(facts, width, len(entry.status or "") + 2 + len(kind_label(entry.kind, source)) + 2), "dim"),
    )  # fmt: skip
    parts: list[Any] = [head, Text(""), _pairs(headline(entry), width, styles=HEADLINE_STYLE)]
    if progress:
        parts += [Text(""), Group(Text("Progress so far", style="bold"), _pairs(progress, width))]
    for label, section in sections(entry):
        body = _records(section, width) if isinstance(section, Records) else _pairs(section, width)
        parts += [Text(""), Group(Text(label, style="bold"), body)]
    if everything:
        parts += [Text(""), Text("Every field", style="bold underline")]
        parts += _field_dump(d)
    else:
        parts += [Text(""), Text(f"kb show {short(entry.id)} --all: every field as stored", style="dim")]
    if entry.body.strip():
        parts += [Text(""), _body(entry.body)]
    return Group(*parts)


def _pairs(rows: Iterable[tuple[str, str]], width: int, styles: dict[str, str] | None = None) -> Table:
    """Labelled lines: the label never wraps, a long value folds under itself; a label is cut only where it would
    take more than half the width (a settings key such as torch_num_interop_threads stays whole at 80 columns)."""
    table = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    table.add_column(style="dim", no_wrap=True, max_width=width // 2, overflow="ellipsis")
    table.add_column(overflow="fold")
    for label, value in rows:
        table.add_row(data(label), data(value, (styles or {}).get(label, "")))
    return table


def _records(records: Any, width: int) -> Text:
    """A table of records (compile frames) that fits `width`: columns no record fills are left out, and the
    `cut` column gives way with an ellipsis; nothing wraps."""
    keep = [i for i in range(len(records.header)) if any(row[i] not in ("", "-") for row in records.rows)]
    cells = [[data(row[i]) for i in keep] for row in records.rows]
    heads = [Text(records.header[i], "bold") for i in keep]
    widths = [max(h.cell_len, *(row[n].cell_len for row in cells)) for n, h in enumerate(heads)]
    if records.cut in keep:
        flexible = keep.index(records.cut)
        others = sum(widths) - widths[flexible] + len(GAP) * (len(keep) - 1)
        widths[flexible] = max(8, min(widths[flexible], width - others))
    lines = []
    for line_cells in [heads, *cells]:
        line = Text()
        for n, (cell, cell_width) in enumerate(zip(line_cells, widths, strict=True)):
            cell = cell.copy()
            cell.truncate(cell_width, overflow="ellipsis", pad=n < len(widths) - 1)
            line.append_text(cell)
            if n < len(widths) - 1:
                line.append(GAP)
        lines.append(line)
    return Text("\n").join(lines)


def _field_dump(d: dict[str, Any]) -> list[Any]:
    parts: list[Any] = []
    shown = set(IDENTITY)
    for key, label in SECTIONS:
        if d.get(key) not in (None, {}, []):
            parts.append(_section(label, d[key]))
            shown.add(key)
    rest = {key: value for key, value in d.items() if key not in shown and value not in (None, {}, [])}
    if rest:
        parts.append(_section("More", rest))
    return parts


def _section(label: str, value: Any) -> Table:
    table = Table(title=Text(label, style="bold"), title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, text in flatten(value):
        table.add_row(data(key), data(text))
    return table


def _body(body: str) -> RenderableType:
    """The notes and output: Markdown in a terminal; in a pipe, the text as written."""
    text = safe(body)
    if not is_terminal():
        return Text(text)
    from rich.markdown import Markdown  # a tenth of a second to import (markdown-it, Pygments): only here

    return Markdown(text)


# Comparisons: kb compare and kb rerun


def _cell(row: Any, index: int, *, with_verdict: bool = True) -> str:
    value = row.values[index]
    if value is None:
        return "-"
    text = humanize.quantity(value, row.unit) if isinstance(value, (int, float)) else str(value)
    ratio = row.ratios[index] if index < len(row.ratios) else None
    if index and ratio is not None:
        text += f"  ×{ratio:.3g}"
    verdict = row.verdicts[index] if index < len(row.verdicts) else ""
    if index and verdict and with_verdict:
        text += f" {verdict}"
    return text


def _verdict_lines(comparison: Any) -> list[str]:
    """Each figure's verdict against the baseline with its footing, a phrase per line of COMPARISON_WIDTH (never a
    cell folded mid-phrase); the figures they judge are the medians in the table."""
    said = []
    for row in comparison.rows:
        for index in range(1, len(comparison.entries)):
            verdict = row.verdicts[index] if index < len(row.verdicts) else ""
            if verdict and row.values[index] is not None:
                ratio = row.ratios[index] if index < len(row.ratios) else None
                times = f"×{ratio:.3g} " if ratio is not None else ""
                said.append(f"{row.name}, {comparison.labels[index]}: {times}{verdict}")
    if not said:
        return []
    pooled = any(n > 1 for n in comparison.runs)
    head = "Against the baseline" + (" (each figure above: the median of its runs, n):" if pooled else ":")
    return _wrapped([head]) + _wrapped(said, indent="  ")


def _wrapped(phrases: list[str], indent: str = "") -> list[str]:
    return [line for phrase in phrases for line in textwrap.wrap(
        phrase, COMPARISON_WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False,
        break_on_hyphens=False)]  # fmt: skip


def comparison_view(comparison: Any, *, short: Callable[[str], str] = short_id) -> Group:
    parts: list[Any] = [Text("What differs", style="bold")]
    parts += [Text("  ") + data(line) for line in comparison.differences] or [Text("  nothing recorded differs")]
    table = Table(box=None, header_style="bold", pad_edge=False, title_justify="left")
    table.add_column("", overflow="fold")
    for index, entry in enumerate(comparison.entries):
        role = "baseline" if index == 0 else entry.status or entry.kind
        # Named by backend · mode · hardware (with "(reported)"), the id below it.
        heading = f"{comparison.labels[index]}\n{short(entry.id)}\n{role}"
        table.add_column(data(heading, one_line=False), overflow="fold")
    section = None
    for row in comparison.rows:
        if row.section != section:
            section = row.section
            table.add_row(data(section, "bold"), *[""] * len(comparison.entries))
        cells = [data(_cell(row, i, with_verdict=False)) for i in range(len(comparison.entries))]
        table.add_row(data(f"  {row.name}"), *cells)
    parts += [Text(""), table]
    verdicts = _verdict_lines(comparison)
    if verdicts:
        parts += [Text(""), *(data(line) for line in verdicts)]
    for change in comparison.cases:
        parts += [
            Text(""),
            Text.assemble(("Cases of ", "bold"), data(change.entry, "bold"), (" against the baseline", "bold")),
        ]
        parts += [Text("  ") + data(line) for line in case_lines(change)]
    parts += [data(line, "dim") for line in _wrapped([f"Noise: {comparison.noise_method}."])]
    return Group(*parts)


def case_lines(change: Any, show: int = 20) -> list[str]:
    """Newly passing, failing and skipped cases, the first `show` of each named."""
    lines = []
    for label, cases in (("newly failing", change.newly_failing), ("newly skipped", change.newly_skipped),
                         ("newly passing", change.newly_passing)):  # fmt: skip
        lines.append(f"{len(cases)} {label}" + (":" if cases else ""))
        lines += [f"  {case}" for case in cases[:show]]
        if len(cases) > show:
            lines.append(f"  ... and {len(cases) - show} more (--json lists all)")
    lines.append(f"{change.added} cases added, {change.removed} removed")
    return lines


def comparison_markdown(comparison: Any) -> str:
    lines = ["**What differs**", ""]
    lines += [f"- {safe(line, one_line=True)}" for line in comparison.differences] or ["- nothing recorded differs"]
    names = zip(comparison.labels, comparison.entries, strict=True)
    header = ["", *(f"{safe(name, one_line=True)}<br>`{e.id}`" for name, e in names)]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in comparison.rows:
        cells = [f"{row.section}.{row.name}", *(_cell(row, i) for i in range(len(comparison.entries)))]
        lines.append("| " + " | ".join(safe(cell, one_line=True).replace("|", "\\|") for cell in cells) + " |")
    for change in comparison.cases:
        lines += ["", f"**Cases of `{change.entry}` against the baseline**", ""]
        lines += [f"- {line}" if not line.startswith("  ") else f"  - `{line.strip()}`" for line in case_lines(change)]
    lines += ["", f"Noise: {comparison.noise_method}."]
    return "\n".join(lines)
