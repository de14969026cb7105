"""Lists for pipes and files: whole plain lines, without Rich (importing it costs a tenth of a second).

Every text that came from a run, a file or a person goes through `safe()`, which makes each control
character visible (an ESC from an entry never reaches a reader's terminal). kb.terminal.rich_text lays the same
columns out for a terminal.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kb.model.ids import short_id
from kb.text import humanize

STATUS_STYLE = {"completed": "green", "failed": "red", "killed": "red", "interrupted": "yellow", "running": "cyan"}

# C0 and C1 controls, DEL, bidirectional overrides and isolates (they reorder what a reader sees), the BOM,
# and lone surrogates (bytes that were not UTF-8, which a terminal cannot be sent at all).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_LINE_BREAKS = re.compile("\r\n|[\t\n\r\x0b\x0c\x85\u2028\u2029]")


def safe(text: Any, *, one_line: bool = False) -> str:
    """Text from an entry as data for the terminal: each control character shown as its escape (\\x1b);
    with `one_line`, tabs and line breaks become spaces (a row stays one row)."""
    value = _LINE_BREAKS.sub(" ", str(text)) if one_line else str(text).replace("\r\n", "\n")
    return _CONTROL.sub(_visible, value)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def piped() -> bool:
    """Whether output goes to no terminal, told as Rich's Console.is_terminal tells it (TTY_COMPATIBLE=0 or 1
    first, then FORCE_COLOR, empty or not, then whether standard output is a tty) without importing Rich."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force == ""
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return True


def kind_label(kind: str, source: str | None) -> str:
    """The kind, with reported figures marked so they are never read as measured ones."""
    return kind + (" (reported)" if source == "reported" else "")


def write_lines(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


# Lists: kb ls and kb search


class Column:
    """One column of a list: its header, its text and style for a row, how soon it is left out when space
    runs short (0: never) and the width it is cut to."""

    def __init__(self, header: str, text: Callable[[dict[str, Any]], str], drop: int, limit: int = 0,
                 style: Callable[[dict[str, Any]], str] = lambda row: "") -> None:  # fmt: skip
        self.header, self.text, self.drop, self.limit, self.style = header, text, drop, limit, style


def list_columns(sorted_by: str | None, short: Callable[[str], str] = short_id) -> list[Column]:
    """Columns of `kb ls`, ids as `short` gives them."""
    columns = [
        Column("id", lambda r: short(r["id"]), 0, style=lambda r: "bold"),
        Column("status", lambda r: r["status"] or "", 9, style=lambda r: STATUS_STYLE.get(r["status"] or "", "")),
        Column(
            "kind", lambda r: kind_label(r["kind"], r.get("source")), 6, style=lambda r: reported_style(r.get("source"))
        ),
        Column("workload", lambda r: r.get("workload") or "", 5, limit=20),
        Column("backend", lambda r: r.get("backend") or "", 2, limit=12),
        Column("mode", lambda r: r.get("mode") or "", 1, limit=10),
        Column("failure", lambda r: r.get("failure_class") or "", 7, limit=18, style=lambda r: "red"),
        Column("wall", lambda r: humanize.duration(r["wall_s"]) if r.get("wall_s") is not None else "", 3),
    ]
    if sorted_by:
        header = sorted_by.split(".", 1)[-1]  # metric.tokens_per_s: the name says enough
        columns.append(Column(header, lambda r: _sort_value(sorted_by, r.get("sort_value")), 8, limit=24))
    return columns


def reported_style(source: str | None) -> str:
    return "yellow" if source == "reported" else ""


def _sort_value(sort: str, value: Any) -> str:
    if value is None:
        return ""
    return humanize.duration(value) if sort.startswith("timing") else humanize.number(value)


def rows_lines(rows: list[dict[str, Any]], sorted_by: str | None = None) -> list[str]:
    """Index rows for a pipe: one tab-separated line per row (full id first, title last, whole), no header."""
    columns = list_columns(sorted_by, short=lambda full: full)
    return [
        "\t".join([*(safe(c.text(row), one_line=True) or "-" for c in columns), safe(row["title"], one_line=True)])
        for row in rows
    ]


def search_lines(results: list[tuple[Any, dict[str, Any]]]) -> list[str]:
    """Hits for a pipe: id, status, source, backend, workload, mode, score, title, snippet, tab-separated."""
    lines = []
    for hit, row in results:
        fields = [row["id"], row["status"], row.get("source"), row["backend"], row["workload"], row["mode"]]
        cells = [safe(v, one_line=True) if v else "-" for v in fields]
        cells += [
            f"{hit.score:.2f}",
            safe(row["title"], one_line=True),
            safe(hit.snippet.replace("**", ""), one_line=True),
        ]
        lines.append("\t".join(cells))
    return lines


def write_csv(rows: list[dict[str, Any]]) -> None:
    import csv

    if not rows:
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    # Read in a terminal as often as by a program: an escape sequence in a title is shown, never sent.
    writer.writerows({k: safe(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows)


def with_path(sentence: str, path: Path) -> str:
    """`sentence`, then the file it is about on a line of its own: the sentence stays within 80 columns, however
    long the path is. From the working folder when the file is under it (shorter to read and to paste)."""
    cwd = Path.cwd()
    return f"{sentence}\n  {path.relative_to(cwd) if path.is_relative_to(cwd) else path}"
