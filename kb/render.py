"""Entries for people: rich text in the terminal. Commands call these with data, never the other way round."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kb.entry import Entry
from kb.sections import IDENTITY, SECTIONS, flatten

STATUS_STYLE = {"completed": "green", "failed": "red", "killed": "red", "interrupted": "yellow", "running": "cyan"}


def status_text(status: str | None) -> Text:
    return Text(status or "-", style=STATUS_STYLE.get(status or "", ""))


def kind_text(kind: str, source: str | None) -> Text:
    """The kind, with reported figures marked so they are never read as measured ones."""
    return Text.assemble(kind, (" (reported)", "yellow") if source == "reported" else "")


def entry_view(entry: Entry) -> Group:
    data = entry.data
    source = (data.get("provenance") or {}).get("source")
    head = Text.assemble(
        (entry.title, "bold"), "\n", (entry.id, "dim"), "  ", kind_text(entry.kind, source), "  ",
        status_text(entry.status),
    )  # fmt: skip
    facts = [f"recorded {entry.recorded}"]
    facts += [f"{key} {data[key]}" for key in ("author", "backend", "mode") if data.get(key)]
    if data.get("tags"):
        facts.append("tags " + ", ".join(data["tags"]))
    parts: list[Any] = [head, Text(" · ".join(facts), style="dim")]
    shown = set(IDENTITY)
    for key, label in SECTIONS:
        if data.get(key) not in (None, {}, []):
            parts.append(_section(label, data[key]))
            shown.add(key)
    rest = {key: value for key, value in data.items() if key not in shown and value not in (None, {}, [])}
    if rest:
        parts.append(_section("More", rest))
    if entry.body.strip():
        from rich.markdown import Markdown  # a tenth of a second to import (markdown-it, Pygments): only here

        parts.append(Markdown(entry.body))
    return Group(*parts)


def _section(label: str, value: Any) -> Table:
    table = Table(title=label, title_justify="left", title_style="bold", show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, text in flatten(value):
        table.add_row(key, text)
    return table


def rows_table(rows: list[dict[str, Any]], sorted_by: str | None = None) -> Table:
    """Index rows as a table; a metric or timing the rows are sorted by gets a column of its own."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    columns = ["id", "status", "kind", "backend", "mode", "wall s", *([sorted_by] if sorted_by else []), "title"]
    for column in columns:
        table.add_column(column, no_wrap=column != "title")
    for row in rows:
        cells = [
            row["id"],
            status_text(row["status"]),
            kind_text(row["kind"], row.get("source")),
            row["backend"] or "",
            row["mode"] or "",
            _number(row["wall_s"]),
        ]
        if sorted_by:
            cells.append(_number(row.get("sort_value")))
        table.add_row(*cells, row["title"])
    return table


def search_results(results: list[tuple[Any, dict[str, Any]]]) -> Group:
    parts: list[Any] = []
    for hit, row in results:
        where = " ".join(v for v in (row["backend"], row["workload"], row["mode"]) if v)
        marker = (" reported", "yellow") if row.get("source") == "reported" else ""
        head = Text.assemble(
            (row["id"], "bold"), "  ", status_text(row["status"]), marker, "  ", where,
            (f"  score {hit.score:.2f}", "dim"),
        )  # fmt: skip
        parts += [head, Text(row["title"]), snippet_text(hit.snippet), Text("")]
    return Group(*parts)


def snippet_text(snippet: str) -> Text:
    """A search snippet, its matched words (marked **like this**) in bold and the rest exactly as written."""
    text = Text()
    for index, piece in enumerate(snippet.split("**")):
        text.append(piece, style="bold" if index % 2 else "")
    return text


def write_csv(rows: list[dict[str, Any]]) -> None:
    import csv
    import sys

    if not rows:
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def _number(value: Any) -> str:
    return "" if value is None else f"{value:.4g}"


def _cell(row: Any, index: int) -> str:
    value = row.values[index]
    if value is None:
        return "-"
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    if row.unit and isinstance(value, (int, float)) and not isinstance(value, bool):
        text += f" {row.unit}"
    ratio = row.ratios[index] if index < len(row.ratios) else None
    if index and ratio is not None:
        text += f"  ×{ratio:.3g}"
    verdict = row.verdicts[index] if index < len(row.verdicts) else ""
    if index and verdict:
        text += f" {verdict}"
    return text


def comparison_view(comparison: Any) -> Group:
    parts: list[Any] = [Text("What differs", style="bold")]
    parts += [Text(f"  {line}") for line in comparison.differences] or [Text("  nothing recorded differs")]
    table = Table(box=None, header_style="bold", pad_edge=False, title_justify="left")
    table.add_column("")
    for index, entry in enumerate(comparison.entries):
        reported = " (reported)" if (entry.data.get("provenance") or {}).get("source") == "reported" else ""
        table.add_column(f"{entry.id}\n{'baseline' if index == 0 else entry.status or entry.kind}{reported}")
    section = None
    for row in comparison.rows:
        if row.section != section:
            section = row.section
            table.add_row(Text(section, style="bold"), *[""] * len(comparison.entries))
        table.add_row(f"  {row.name}", *[_cell(row, i) for i in range(len(comparison.entries))])
    parts += [Text(""), table]
    for change in comparison.cases:
        parts += [Text(""), Text(f"Cases of {change.entry} against the baseline", style="bold")]
        parts += [Text(f"  {line}") for line in case_lines(change)]
    parts.append(Text(f"Noise: {comparison.noise_method}.", style="dim"))
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
    lines += [f"- {line}" for line in comparison.differences] or ["- nothing recorded differs"]
    header = ["", *(f"`{e.id}`" for e in comparison.entries)]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in comparison.rows:
        cells = [f"{row.section}.{row.name}", *(_cell(row, i) for i in range(len(comparison.entries)))]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    for change in comparison.cases:
        lines += ["", f"**Cases of `{change.entry}` against the baseline**", ""]
        lines += [f"- {line}" if not line.startswith("  ") else f"  - `{line.strip()}`" for line in case_lines(change)]
    lines += ["", f"Noise: {comparison.noise_method}."]
    return "\n".join(lines)


def console() -> Console:
    """A console that, when writing to a pipe or file, is wide enough that tables are not folded."""
    plain = Console(highlight=False)
    return plain if plain.is_terminal else Console(highlight=False, width=200)
