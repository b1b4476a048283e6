"""Server-rendered SVG charts for the overview: no script, no CDN, no inline style (the
dashboard's content security policy forbids both), colours as attributes.

Every text that reaches a chart is escaped here; the templates mark the result safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

#: Outcome colours, stable across charts (the legend repeats them).
COLOURS = {
    "completed": "#2f855a",
    "in_progress": "#3182ce",
    "dialing": "#63b3ed",
    "enqueued": "#a0aec0",
    "no_answer": "#d69e2e",
    "busy": "#dd6b20",
    "failed": "#c53030",
    "cancelled": "#718096",
}
_FALLBACK = "#805ad5"


def colour(name: str) -> str:
    return COLOURS.get(name, _FALLBACK)


def stacked_bars(
    days: Sequence[str], series: dict[str, list[int]], *, title: str, width: int = 720
) -> Markup:
    """Columns per day, each stacked by outcome; ``series``: outcome -> count per day."""
    height, left, bottom, top = 220, 40, 28, 10
    plot_h = height - bottom - top
    totals = [sum(values[i] for values in series.values()) for i in range(len(days))]
    peak = max([*totals, 1])
    step = (width - left - 10) / max(len(days), 1)
    bar = max(step * 0.7, 2)
    parts = [_open(width, height, title)]
    for tick in _ticks(peak):
        y = top + plot_h - tick / peak * plot_h
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e2e8f0"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#4a5568">{tick}</text>'
        )
    for i, day in enumerate(days):
        x = left + i * step + (step - bar) / 2
        y = top + plot_h
        for outcome, values in series.items():
            if not values[i]:
                continue
            h = values[i] / peak * plot_h
            y -= h
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colour(outcome)}"><title>{escape(day)}: {values[i]} '
                f"{escape(outcome)}</title></rect>"
            )
        if len(days) <= 16 or i % 2 == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 10}" text-anchor="middle" '
                f'font-size="10" fill="#4a5568">{escape(day[5:])}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def paired_bars(
    labels: Sequence[str],
    values: dict[str, list[float | None]],
    *,
    title: str,
    unit: str,
    goal: float | None = None,
    width: int = 720,
) -> Markup:
    """Groups of bars (e.g. p50 and p95 per phase), with an optional goal line."""
    height, left, bottom, top = 200, 48, 28, 10
    plot_h = height - bottom - top
    numbers = [v for series in values.values() for v in series if v is not None]
    peak = max([*numbers, (goal or 0) * 1.15, 1])  # room for the goal line's label
    group = (width - left - 10) / max(len(labels), 1)
    bar = group * 0.7 / max(len(values), 1)
    shades = ["#3182ce", "#c53030", "#2f855a", "#d69e2e"]
    parts = [_open(width, height, title)]
    for tick in _ticks(peak):
        y = top + plot_h - tick / peak * plot_h
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e2e8f0"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'fill="#4a5568">{tick}</text>'
        )
    for i, label in enumerate(labels):
        x0 = left + i * group + group * 0.15
        for j, (name, series) in enumerate(values.items()):
            value = series[i]
            if value is None:
                continue
            h = value / peak * plot_h
            parts.append(
                f'<rect class="bar" x="{x0 + j * bar:.1f}" y="{top + plot_h - h:.1f}" '
                f'width="{bar * 0.9:.1f}" height="{h:.1f}" fill="{shades[j % len(shades)]}">'
                f"<title>{escape(label)} {escape(name)}: {value:.0f} {escape(unit)}</title></rect>"
            )
        parts.append(
            f'<text x="{x0 + group * 0.35:.1f}" y="{height - 10}" text-anchor="middle" '
            f'font-size="11" fill="#4a5568">{escape(label)}</text>'
        )
    if goal is not None:
        y = top + plot_h - goal / peak * plot_h
        parts.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c53030" '
            f'stroke-dasharray="6 4"/><text x="{width - 12}" y="{y - 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#c53030">goal {goal:.0f} {escape(unit)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def rate_bar(rate: float | None, *, title: str, bad_above: float = 0.1) -> Markup:
    """One horizontal bar filled to ``rate`` (0..1); red when above ``bad_above``."""
    width, height = 240, 22
    parts = [_open(width, height, title)]
    parts.append(f'<rect x="0" y="3" width="{width}" height="16" rx="3" fill="#edf2f7"/>')
    if rate is not None:
        fill = "#c53030" if rate > bad_above else "#2f855a"
        parts.append(
            f'<rect class="bar" x="0" y="3" width="{max(rate, 0.0) * width:.1f}" height="16" '
            f'rx="3" fill="{fill}"/>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _open(width: int, height: int, title: str) -> str:
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>"
    )


def _ticks(peak: float) -> list[int]:
    """A few round values from 0 to ``peak``."""
    if peak <= 0:
        return [0]
    raw = peak / 4
    magnitude = 10 ** max(len(str(int(raw))) - 1, 0)
    step = max(int(-(-raw // magnitude)) * magnitude, 1)
    return list(range(0, int(peak) + 1, step))
