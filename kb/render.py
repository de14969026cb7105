"""Entries for people: rich text in the terminal. Commands call these with data, never the other way round."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from kb.entry import Entry

STATUS_STYLE = {"completed": "green", "failed": "red", "killed": "red", "interrupted": "yellow", "running": "cyan"}
# Sections shown as tables of fields, in reading order; the rest of the front matter follows under "More".
SECTIONS = (
    ("workload", "Workload"), ("settings", "Settings"), ("command", "Command"), ("timings", "Timings"),
    ("metrics", "Metrics"), ("failure", "Failure"), ("compile", "Compile"), ("fallbacks", "Fallbacks"),
    ("memory", "Memory"), ("numerics", "Numerics"), ("ranks", "Ranks"), ("decision", "Decision"),
    ("release", "Release"), ("precision", "Precision"), ("versions", "Versions"), ("hardware", "Hardware"),
    ("git", "Git"), ("environment", "Environment"), ("links", "Links"), ("provenance", "Provenance"),
    ("attachments", "Attachments"),
)  # fmt: skip
IDENTITY = {"schema", "id", "title", "kind", "status", "recorded", "author", "tags", "backend", "mode", "recorder"}


def status_text(status: str | None) -> Text:
    return Text(status or "-", style=STATUS_STYLE.get(status or "", ""))


def entry_view(entry: Entry) -> Group:
    data = entry.data
    head = Text.assemble(
        (entry.title, "bold"), "\n", (entry.id, "dim"), "  ", entry.kind, "  ", status_text(entry.status)
    )
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
        parts.append(Markdown(entry.body))
    return Group(*parts)


def _section(label: str, value: Any) -> Table:
    table = Table(title=label, title_justify="left", title_style="bold", show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, text in _flatten(value):
        table.add_row(key, text)
    return table


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if prefix == "" and isinstance(value, list) and all(isinstance(v, dict) and "path" in v for v in value):
        return [
            (
                item["path"],
                " ".join(str(item[k]) for k in ("role", "bytes") if item.get(k) is not None)
                + (" bytes" if item.get("bytes") is not None else ""),
            )
            for item in value
        ]  # attachments
    if isinstance(value, dict):
        if set(value) <= {"value", "unit", "phase", "better", "step"} and "value" in value and prefix:
            return [(prefix, _metric(value))]
        rows = []
        for key, item in value.items():
            rows += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return [(prefix, " ".join(map(str, value)))]
        if all(
            isinstance(item, dict) and not any(isinstance(v, (dict, list)) for v in item.values()) for item in value
        ):
            # A list of records (compile frames, per-rank figures): one line each, unknown values left out.
            return [
                (f"{prefix}[{index}]", "  ".join(f"{k} {v}" for k, v in item.items() if v is not None))
                for index, item in enumerate(value)
            ]
        rows = []
        for index, item in enumerate(value):
            rows += _flatten(item, f"{prefix}[{index}]")
        return rows
    return [(prefix or "-", "-" if value is None else str(value))]


def _metric(metric: dict[str, Any]) -> str:
    text = "-" if metric["value"] is None else f"{metric['value']:g}"
    extras = [metric[key] for key in ("unit",) if metric.get(key)]
    extras += [f"{key} {metric[key]}" for key in ("phase", "step", "better") if metric.get(key) is not None]
    return " ".join([text, *map(str, extras)])


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
            row["kind"],
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
        head = Text.assemble(
            (row["id"], "bold"), "  ", status_text(row["status"]), "  ", where, (f"  score {hit.score:.2f}", "dim")
        )
        parts += [head, Text(row["title"]), Markdown(hit.snippet) if hit.snippet else Text(""), Text("")]
    return Group(*parts)


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
        table.add_column(f"{entry.id}\n{'baseline' if index == 0 else entry.status or entry.kind}")
    section = None
    for row in comparison.rows:
        if row.section != section:
            section = row.section
            table.add_row(Text(section, style="bold"), *[""] * len(comparison.entries))
        table.add_row(f"  {row.name}", *[_cell(row, i) for i in range(len(comparison.entries))])
    parts += [Text(""), table, Text(f"Noise: {comparison.noise_method}.", style="dim")]
    return Group(*parts)


def comparison_markdown(comparison: Any) -> str:
    lines = ["**What differs**", ""]
    lines += [f"- {line}" for line in comparison.differences] or ["- nothing recorded differs"]
    header = ["", *(f"`{e.id}`" for e in comparison.entries)]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in comparison.rows:
        cells = [f"{row.section}.{row.name}", *(_cell(row, i) for i in range(len(comparison.entries)))]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines += ["", f"Noise: {comparison.noise_method}."]
    return "\n".join(lines)


def console() -> Console:
    """A console that, when writing to a pipe or file, is wide enough that tables are not folded."""
    plain = Console(highlight=False)
    return plain if plain.is_terminal else Console(highlight=False, width=200)
