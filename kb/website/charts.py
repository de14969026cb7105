"""Charts as inline SVG, no script, no style attribute: a metric across versions (one line per backend), a run's
curve over its steps, and its step times by phase.

Versions are categories (PEP 440 order from kb.answers.trend), so the x axis spaces them evenly. Colours come
from classes in the stylesheet (`series-0` ... `series-7`), which keeps the page within its Content
Security Policy and readable in print.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

from kb.answers.trend import Trend
from kb.index.query import version_key
from kb.text.humanize import duration, number

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 56
PALETTE = 8


def trend_svg(result: Trend, title: str, colours: dict[str | None, int]) -> Markup:
    """`colours` numbers each group, so a backend keeps its colour across the charts of a page."""
    versions = _versions(result)
    values = [point.value for series in result.series for point in series.points]
    low, high = _span(min(values), max(values))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(version: str) -> float:
        return LEFT + (versions.index(version) + 0.5) * plot_w / len(versions)

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    legend = _legend_places([series.group or "all" for series in result.series])
    height = HEIGHT + legend[-1][1] if legend else HEIGHT
    parts = _frame(title, plot_h, height)
    for tick in _ticks(low, high):
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y(tick):.1f}" x2="{WIDTH - RIGHT}" y2="{y(tick):.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.4g}</text>')
    for version in versions:
        parts.append(
            f'<text class="tick" x="{x(version):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
            f"{escape(version)}</text>"
        )
    for index, series in enumerate(result.series):
        css = f"series-{colours.get(series.group, index) % PALETTE}"
        points = " ".join(f"{x(p.version):.1f},{y(p.value):.1f}" for p in series.points)
        parts.append(f'<polyline class="line {css}" points="{points}"/>')
        for point in series.points:
            flag = f" {point.flag}" if point.flag else ""
            label = (
                f"{series.group or 'all'} · {result.package} {point.version}: {point.value:.4g} (n={point.count}){flag}"
            )
            parts.append(
                f'<circle class="dot {css}{flag}" cx="{x(point.version):.1f}" cy="{y(point.value):.1f}" r="4">'
                f"<title>{escape(label)}</title></circle>"
            )
        legend_x, below = legend[index]
        parts.append(f'<rect class="{css}" x="{legend_x}" y="{HEIGHT - 20 + below}" width="12" height="12"/>')
        parts.append(
            f'<text class="legend" x="{legend_x + 16}" y="{HEIGHT - 10 + below}">{escape(series.group or "all")}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


LEGEND_CHAR = 7  # wider than an average character of the legend's 11 px text: labels never meet
LEGEND_ROW = 16


def _legend_places(labels: list[str]) -> list[tuple[int, int]]:
    """(x, how far below the first legend row) of each label's swatch: side by side while they fit the width,
    then on the next row, so that long labels (`neuron · compiled · batch=8`) never print over each other."""
    places, x, below = [], LEFT, 0
    for label in labels:
        width = 16 + LEGEND_CHAR * len(label) + 14
        if x > LEFT and x + width > WIDTH - RIGHT:
            x, below = LEFT, below + LEGEND_ROW
        places.append((x, below))
        x += width
    return places


def _versions(result: Trend) -> list[str]:
    """Every version of any series, in the order kb.answers.trend put them (each series is PEP 440 ordered)."""
    seen: list[str] = []
    for series in result.series:
        for point in series.points:
            if point.version not in seen:
                seen.append(point.version)
    return sorted(seen, key=version_key)


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    step = (high - low) / count
    return [round(low + step * i, 6) for i in range(count + 1)]


def curve_svg(values: list[float], title: str, stride: int = 1) -> Markup:
    """Values over steps (a loss curve), every `stride`-th step of the run; values that are not finite leave a gap."""
    finite = [value for value in values if math.isfinite(value)]
    low, high = _span(min(finite), max(finite))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    last = max((len(values) - 1) * stride, 1)

    def x(step: int) -> float:
        return LEFT + step * plot_w / last

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    parts = _frame(title, plot_h)
    for tick in _round_ticks(low, high):
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y(tick):.1f}" x2="{WIDTH - RIGHT}" y2="{y(tick):.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{number(tick)}</text>')
    for step in (int(tick) for tick in _round_ticks(0, last) if tick == int(tick)):  # whole steps only
        parts.append(f'<text class="tick" x="{x(step):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{step}</text>')
    parts.append(f'<text class="legend" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">step</text>')
    runs: list[list[str]] = [[]]
    for index, value in enumerate(values):
        if math.isfinite(value):
            runs[-1].append(f"{x(index * stride):.1f},{y(value):.1f}")
        elif runs[-1]:
            runs.append([])
    for points in runs:
        if points:
            parts.append(f'<polyline class="line series-0" points="{" ".join(points)}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))


def step_times_svg(rows: list[tuple[str, float, float | None, float | None]], title: str) -> Markup:
    """Step times by phase on a log scale: (label, value, low, high), a dot at the value and a bar from low to high.

    A log scale because the first step of a compiled run is hundreds of times a steady one: on a linear axis the
    steady steps would be a sliver at zero.
    """
    left = 150
    values = [v for _, value, low, high in rows for v in (value, low, high) if v is not None and v > 0]
    low_exp, high_exp = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    high_exp = max(high_exp, low_exp + 1)
    row_h = 28
    height = TOP + row_h * len(rows) + 40
    plot_w = WIDTH - left - RIGHT

    def x(value: float) -> float:
        return left + (math.log10(value) - low_exp) / (high_exp - low_exp) * plot_w

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    bottom = TOP + row_h * len(rows)
    for exponent in range(low_exp, high_exp + 1):
        tick_x = x(10.0**exponent)
        parts.append(f'<line class="grid" x1="{tick_x:.1f}" y1="{TOP}" x2="{tick_x:.1f}" y2="{bottom}"/>')
        parts.append(
            f'<text class="tick" x="{tick_x:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{duration(10.0**exponent)}</text>"
        )
    parts.append(f'<line class="axis" x1="{left}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}"/>')
    for index, (label, value, low, high) in enumerate(rows):
        middle = TOP + row_h * index + row_h / 2
        parts.append(f'<text class="tick" x="{left - 8}" y="{middle + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        if low is not None and high is not None and low > 0 and high > 0:
            parts.append(
                f'<line class="line series-1" x1="{x(low):.1f}" y1="{middle:.1f}" '
                f'x2="{x(high):.1f}" y2="{middle:.1f}"/>'
            )
        spread = f" ({duration(low)} to {duration(high)})" if low is not None and high is not None else ""
        parts.append(
            f'<circle class="dot series-0" cx="{x(value):.1f}" cy="{middle:.1f}" r="5">'
            f"<title>{escape(label)}: {duration(value)}{spread}</title></circle>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def step_time_rows(timings: dict[str, Any], warmup_steps: Any) -> list[tuple[str, float, float | None, float | None]]:
    """The rows of step_times_svg from an entry's timings: the first step, a warm-up step on average, the steady
    median with its p10 to p90 spread and its fastest and slowest step."""
    rows: list[tuple[str, float, float | None, float | None]] = []
    if _positive(timings.get("first_step_s")):
        rows.append(("first step", timings["first_step_s"], None, None))
    if _positive(timings.get("warmup_s")) and isinstance(warmup_steps, int) and warmup_steps > 1:
        rows.append(("warm-up step, mean", timings["warmup_s"] / (warmup_steps - 1), None, None))
    step = timings.get("step_s")
    if isinstance(step, dict) and _positive(step.get("median")):
        low, high = (step.get(key) if _positive(step.get(key)) else None for key in ("p10", "p90"))
        rows.append(("steady step, median", step["median"], low, high))
        if _positive(step.get("min")) and _positive(step.get("max")):
            rows.append(("steady, fastest to slowest", step["median"], step["min"], step["max"]))
    return rows


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _span(low: float, high: float) -> tuple[float, float]:
    if low == high:
        return low - (abs(low) or 1) * 0.1, high + (abs(high) or 1) * 0.1
    return (min(low, 0) if 0 <= low < high * 0.5 else low), high  # from zero unless that flattens the line


def _frame(title: str, plot_h: int, height: int = HEIGHT) -> list[str]:
    return [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>',
    ]


def _round_ticks(low: float, high: float) -> list[float]:
    """Ticks at round values (1, 2 or 5 times a power of ten) inside [low, high], four to ten of them."""
    rough = (high - low) / 5
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    first = math.ceil(low / step)
    return [round(i * step, 12) for i in range(first, math.floor(high / step) + 1)]
