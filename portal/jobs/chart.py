"""A line chart as SVG geometry, computed on the server (the pages carry no JavaScript)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 600, 160


@dataclass(frozen=True, slots=True)
class Chart:
    points: str  # the polyline's "x,y x,y …"; empty when there is nothing to draw
    count: int
    x_min: float
    x_max: float
    y_max: float
    last: float | None
    mean: float | None
    width: int = WIDTH
    height: int = HEIGHT


def line_chart(samples: Sequence[tuple[float, float]], *, y_max: float) -> Chart:
    """``(x, y)`` samples scaled into a ``WIDTH`` by ``HEIGHT`` box, y from 0 to ``y_max``
    (values above it are drawn at the top), x over the samples' own span."""
    if not samples:
        return Chart("", 0, 0.0, 0.0, y_max, None, None)
    xs = [x for x, _ in samples]
    lo, hi = min(xs), max(xs)
    span = hi - lo or 1.0

    def y_of(v: float) -> float:
        return HEIGHT - HEIGHT * max(0.0, min(v, y_max)) / y_max

    coords = [
        f"{WIDTH * (x - lo) / span if len(samples) > 1 else WIDTH / 2:.1f},{y_of(y):.1f}"
        for x, y in samples
    ]
    ys = [y for _, y in samples]
    return Chart(" ".join(coords), len(samples), lo, hi, y_max, ys[-1], sum(ys) / len(ys))
