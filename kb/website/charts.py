"""Trend charts as inline SVG: a metric across versions, one line per backend. No script, no style attribute.

Versions are categories (PEP 440 order from kb.answers.trend), so the x axis spaces them evenly. Colours come
from classes in the stylesheet (`series-0` ... `series-7`), which keeps the page within its Content
Security Policy and readable in print.
"""

from __future__ import annotations

from markupsafe import Markup, escape

from kb.answers.trend import Trend
from kb.index.query import version_key

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 56
PALETTE = 8


def trend_svg(result: Trend, title: str, colours: dict[str | None, int]) -> Markup:
    """`colours` numbers each group, so a backend keeps its colour across the charts of a page."""
    versions = _versions(result)
    values = [point.value for series in result.series for point in series.points]
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) or 1) * 0.1, high + (abs(high) or 1) * 0.1
    low = min(low, 0) if low >= 0 and low < high * 0.5 else low  # start at zero unless that flattens the lines
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(version: str) -> float:
        return LEFT + (versions.index(version) + 0.5) * plot_w / len(versions)

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>',
    ]
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
        legend_x = LEFT + index * 120
        parts.append(f'<rect class="{css}" x="{legend_x}" y="{HEIGHT - 20}" width="12" height="12"/>')
        parts.append(
            f'<text class="legend" x="{legend_x + 16}" y="{HEIGHT - 10}">{escape(series.group or "all")}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


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
