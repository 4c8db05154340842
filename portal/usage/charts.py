"""Usage over time as a stacked bar chart, its geometry computed on the server: the page
draws it as inline SVG (no script, no CDN) and gives the same numbers as a table for screen
readers and for copying."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from babel.dates import format_skeleton

from accounting.timeline import Series, Step, advance
from portal.i18n import current, gettext, number

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 8, 10, 30
#: at most this many labels under the bars
LABELS = 8


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int  # which colour (0 … 6; 6 is "others")
    title: str  # what a pointer over it reads


@dataclass(frozen=True, slots=True)
class Mark:
    at: float  # pixels: y of a tick, x of a label
    text: str


@dataclass(frozen=True, slots=True)
class StackChart:
    bars: tuple[Bar, ...]
    ticks: tuple[Mark, ...]
    labels: tuple[Mark, ...]
    legend: tuple[tuple[int, str], ...]
    #: the table behind it: (bucket label, value per legend entry, total)
    rows: tuple[tuple[str, tuple[str, ...], str], ...]
    empty: bool
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    bottom: int = HEIGHT - BOTTOM


def axis_top(highest: float) -> float:
    """Where the value axis ends: from 0 always, to the first 1, 2, 2.5 or 5 times a power of
    ten at or above the highest bar; 1 card-hour when nothing was used (never an axis around
    zero)."""
    if highest <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(highest))
    return float(next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= highest))


def gridlines(top: float) -> list[tuple[float, str]]:
    """The value axis' marks from 0 to ``top`` (as :func:`axis_top` makes it), at round steps:
    4 of them for 2 (0.5 each), else 5; written with the decimals the step needs."""
    parts = 4 if math.isclose(top / 10 ** math.floor(math.log10(top)), 2) else 5
    step = top / parts
    digits = next(d for d in range(7) if math.isclose(round(step, d), step) or d == 6)
    return [(step * k, number(step * k, digits)) for k in range(parts + 1)]


def bucket_label(t: datetime, step: Step) -> str:
    """A bucket's start the reader's way: ``14:00``; ``11月3日`` / ``Nov 3``; ``2026年11月``."""
    if step is Step.HOUR:
        return t.strftime("%H:%M")
    skeleton = "MMMd" if step is Step.DAY else "yMMM"
    return str(format_skeleton(skeleton, t, locale=current()))


def stacked(series: Series, names: list[str]) -> StackChart:
    """Bars per bucket, one segment per group (``names``: the groups' names as shown, in the
    order of ``series.keys``, then "others" where there is a rest)."""
    rows_of = [*series.values, *([series.other] if series.other is not None else [])]
    totals = series.totals
    top = axis_top(float(max(totals, default=Decimal(0))))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = max(len(series.starts), 1)
    slot = inner_w / n
    labels = [bucket_label(t, series.step) for t in series.starts]
    bars = []
    for j, label in enumerate(labels):
        base = 0.0
        for i, row in enumerate(rows_of):
            value = float(row[j])
            if value <= 0:
                continue
            h = inner_h * value / top
            title = gettext(
                "%(when)s, %(name)s: %(value)s card-hours",
                when=label,
                name=names[i],
                value=number(row[j], 2),
            )
            x = LEFT + j * slot + slot * 0.1
            bars.append(Bar(x, TOP + inner_h - base - h, slot * 0.8, h, min(i, 6), title))
            base += h
    ticks = tuple(Mark(TOP + inner_h * (1 - v / top), text) for v, text in gridlines(top))
    every = max(1, math.ceil(n / LABELS))
    marks = tuple(
        Mark(LEFT + (j + 0.5) * slot, label) for j, label in enumerate(labels) if j % every == 0
    )
    table = tuple(
        (label, tuple(number(row[j], 2) for row in rows_of), number(totals[j], 2))
        for j, label in enumerate(labels)
    )
    legend = tuple((min(i, 6), name) for i, name in enumerate(names[: len(rows_of)]))
    return StackChart(tuple(bars), ticks, marks, legend, table, series.empty)


def data(series: Series, names: list[str], zone: str) -> dict[str, Any]:
    """What the page's script draws with uPlot: bucket starts (epoch seconds), the groups'
    names and card-hours, the step and the site's time zone (days are the site's days)."""
    rows = [*series.values, *([series.other] if series.other is not None else [])]
    return {
        # the middle of each bucket, where its bar stands
        "t": [int((t + (advance(t, series.step) - t) / 2).timestamp()) for t in series.starts],
        "names": names[: len(rows)],
        "values": [[float(v) for v in row] for row in rows],
        "step": series.step.value,
        "zone": zone,
        "unit": gettext("card-hours"),
        "time": gettext("Time"),
    }
