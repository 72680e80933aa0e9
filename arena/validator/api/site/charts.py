"""Server-side SVG charts: pure functions from data to an inline ``<svg>`` (a :class:`markupsafe.Markup`,
so templates insert it as it is), readable without JavaScript and fetching nothing.

- :func:`line_chart`: one polyline per :class:`Series` over a numeric x axis (days as ordinals, see
  :func:`day_ticks`), the first series drawn emphasised (the winner).
- :func:`bar_chart`: labelled bars (a histogram, counts per category).
- :func:`reign_bar`: who reigned when, a horizontal band of :class:`Segment` over a date range.

Every label is escaped; every drawn mark carries ``data-*`` attributes with its value, so a test can read
the chart from the DOM. An empty chart still renders (its frame and a "no data" note), with no marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Final

from markupsafe import Markup, escape

PALETTE: Final = ("#1f6feb", "#9a6700", "#8250df", "#1a7f37", "#cf222e", "#57606a", "#bf3989", "#0a7b83")
"""Colours of series, bars and reign segments, in order (repeating)."""
MARGIN: Final = (34, 12, 30, 48)
"""Top, right, bottom, left padding around the plot area, in SVG units."""


@dataclass(frozen=True)
class Series:
    """One line: ``(x, y)`` points, drawn in x order."""

    name: str
    points: Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Segment:
    """One reign: ``label`` held the crown from ``start`` to ``end`` (days, inclusive of start)."""

    label: str
    start: date
    end: date
    href: str | None = None


def _num(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _frame(width: int, height: int, title: str, body: list[str], css_class: str) -> Markup:
    label = escape(title)
    return Markup(
        f'<svg class="chart {css_class}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'aria-label="{label}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f'<title>{label}</title><text class="chart-title" x="{MARGIN[3]}" y="18">{label}</text>'
        + "".join(body)
        + "</svg>"
    )


def _no_data(width: int, height: int) -> str:
    return f'<text class="no-data" x="{width // 2}" y="{height // 2}" text-anchor="middle">no data</text>'


def day_ticks(days: Sequence[date], *, most: int = 6) -> list[tuple[float, str]]:
    """At most ``most`` evenly spaced ``(ordinal, "MM-DD")`` ticks over ``days`` (for a day x axis)."""
    ordered = sorted(set(days))
    if not ordered:
        return []
    step = max(1, -(-len(ordered) // most))
    return [(d.toordinal(), f"{d:%m-%d}") for d in ordered[::step]]


def _span(values: Sequence[float], fixed: tuple[float, float] | None) -> tuple[float, float]:
    low, high = fixed if fixed is not None else (min(values), max(values))
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    width: int = 640,
    height: int = 240,
    y_range: tuple[float, float] | None = (0.0, 1.0),
    x_ticks: Sequence[tuple[float, str]] = (),
    x_range: tuple[float, float] | None = None,
) -> Markup:
    """Lines of ``series`` on shared axes (``y_range``, ``x_range`` None: fitted to the data), with a
    legend."""
    top, right, bottom, left = MARGIN
    points = [p for s in series for p in s.points]
    body = [
        f'<rect class="plot" x="{left}" y="{top}" width="{width - left - right}" '
        f'height="{height - top - bottom}" fill="none" stroke="#d0d7de"/>'
    ]
    if not points:
        return _frame(width, height, title, [*body, _no_data(width, height)], "line-chart")
    x0, x1 = _span([x for x, _ in points], x_range)
    y0, y1 = _span([y for _, y in points], y_range)

    def at(x: float, y: float) -> str:
        px = left + (x - x0) / (x1 - x0) * (width - left - right)
        py = height - bottom - (y - y0) / (y1 - y0) * (height - top - bottom)
        return f"{px:.1f},{py:.1f}"

    for value in (y0, (y0 + y1) / 2, y1):
        ypos = at(x0, value).split(",")[1]
        body.append(f'<text class="tick" x="{left - 4}" y="{ypos}" text-anchor="end">{_num(value)}</text>')
    for x, label in x_ticks:
        xpos = at(x, y0).split(",")[0]
        body.append(
            f'<text class="tick" x="{xpos}" y="{height - bottom + 14}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    for n, line in enumerate(series):
        if not line.points:
            continue
        colour, name = PALETTE[n % len(PALETTE)], escape(line.name)
        ordered = sorted(line.points)
        coords = " L".join(at(x, y) for x, y in ordered)
        values = " ".join(f"{_num(x)}:{y:.4f}" for x, y in ordered)
        body.append(
            f'<path class="series" data-series="{name}" data-values="{values}" d="M{coords}" '
            f'fill="none" stroke="{colour}" stroke-width="{2.5 if n == 0 else 1.5}"/>'
        )
        body.extend(
            f'<circle class="point" cx="{at(x, y).split(",")[0]}" cy="{at(x, y).split(",")[1]}" '
            f'r="{3 if n == 0 else 2}" fill="{colour}"><title>{name}: {y:.4f}</title></circle>'
            for x, y in ordered
        )
        body.append(
            f'<text class="legend" x="{left + 8 + 130 * n}" y="{top - 4}" fill="{colour}">{name}</text>'
        )
    return _frame(width, height, title, body, "line-chart")


def bar_chart(
    bars: Sequence[tuple[str, float]], *, title: str, width: int = 640, height: int = 220
) -> Markup:
    """One bar per ``(label, value)`` (values >= 0), scaled to the largest."""
    top, right, bottom, left = MARGIN
    body: list[str] = []
    if not bars:
        return _frame(width, height, title, [_no_data(width, height)], "bar-chart")
    most = max(value for _, value in bars) or 1.0
    slot = (width - left - right) / len(bars)
    for n, (label, value) in enumerate(bars):
        tall = value / most * (height - top - bottom)
        x, y = left + n * slot + slot * 0.1, height - bottom - tall
        body.append(
            f'<rect class="bar" data-label="{escape(label)}" data-value="{_num(value)}" '
            f'x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" height="{tall:.1f}" '
            f'fill="{PALETTE[0]}"><title>{escape(label)}: {_num(value)}</title></rect>'
        )
        body.append(
            f'<text class="tick" x="{x + slot * 0.4:.1f}" y="{height - bottom + 14}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
        body.append(
            f'<text class="value" x="{x + slot * 0.4:.1f}" y="{y - 3:.1f}" '
            f'text-anchor="middle">{_num(value)}</text>'
        )
    return _frame(width, height, title, body, "bar-chart")


def reign_bar(
    segments: Sequence[Segment], *, start: date, end: date, title: str, width: int = 640, height: int = 90
) -> Markup:
    """Who reigned over ``start``..``end`` (inclusive): one coloured band per segment, clipped to the
    range, the same label always in the same colour; days nobody reigned stay blank."""
    top, right, bottom, left = MARGIN
    days = max(1, (end - start).days + 1)
    scale = (width - left - right) / days
    body = [
        f'<rect class="plot" x="{left}" y="{top}" width="{width - left - right}" '
        f'height="{height - top - bottom}" fill="none" stroke="#d0d7de"/>'
    ]
    colours: dict[str, str] = {}
    drawn = 0
    for segment in sorted(segments, key=lambda s: s.start):
        first, last = max(segment.start, start), min(segment.end, end)
        if last < first:
            continue
        colour = colours.setdefault(segment.label, PALETTE[len(colours) % len(PALETTE)])
        x, span = left + (first - start).days * scale, ((last - first).days + 1) * scale
        label = escape(segment.label)
        mark = (
            f'<rect class="reign" data-label="{label}" data-start="{first}" data-end="{last}" '
            f'x="{x:.1f}" y="{top}" width="{span:.1f}" height="{height - top - bottom}" '
            f'fill="{colour}"><title>{label}: {first} to {last}</title></rect>'
        )
        body.append(f'<a href="{escape(segment.href)}">{mark}</a>' if segment.href else mark)
        drawn += 1
    body.append(f'<text class="tick" x="{left}" y="{height - bottom + 14}">{start:%Y-%m-%d}</text>')
    body.append(
        f'<text class="tick" x="{width - right}" y="{height - bottom + 14}" '
        f'text-anchor="end">{end:%Y-%m-%d}</text>'
    )
    if not drawn:
        body.append(_no_data(width, height))
    return _frame(width, height, title, body, "reign-bar")
