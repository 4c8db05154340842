"""An evaluation job's report (``metrics.json``), whatever its task: the one shape every preset
program writes (:meth:`portal.presets.kinds.Kind.evaluate`)::

    {"task": "object-detection",
     "metrics": {"map": 0.41, "map_50": 0.62, "samples": 50},
     "per_class": [{"label": "cat", "ap": 0.5, "support": 12}, …],
     "labels": [], "confusion": []}

``labels`` and ``confusion`` only for classification; ``per_class`` may be empty. The job's
user writes the file, so it is checked here before anything is stored: a number is a number,
names are short, and the tables are bounded. Reports from before ``task`` existed are
classification's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_NAME = 64
MAX_METRICS = 64
MAX_ROWS = 2000  # per-class rows (ADE20k has 150 classes, COCO 80, ImageNet 1,000)
MAX_COLUMNS = 32
#: the other plots an evaluation job may draw beside its report (``out/<name>.png``)
MAX_PLOTS = 8
PLOT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}\.png")


@dataclass(frozen=True, slots=True)
class Report:
    task: str
    metrics: dict[str, float | int]
    per_class: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    confusion: list[list[int]] = field(default_factory=list)


def _name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME


def _number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _numbers(values: Mapping[str, Any], limit: int) -> dict[str, float | int] | None:
    items = list(values.items())
    if len(items) > limit or not all(_name(k) and _number(v) for k, v in items):
        return None
    return dict(items)


def _row(row: object) -> dict[str, Any] | None:
    if not isinstance(row, dict) or not isinstance(row.get("label"), (str, int)):
        return None
    label = str(row["label"])[:MAX_NAME]
    numbers = _numbers({k: v for k, v in row.items() if k != "label"}, MAX_COLUMNS)
    return None if numbers is None else {"label": label, **numbers}


def parse(data: object) -> Report | None:
    """The report if it has the shape; None when it does not (the evaluation then failed)."""
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        return None
    metrics = _numbers(data["metrics"], MAX_METRICS)
    task = data.get("task", "")
    per_class = data.get("per_class", [])
    labels = data.get("labels", [])
    confusion = data.get("confusion", [])
    if metrics is None or not isinstance(task, str) or len(task) > MAX_NAME:
        return None
    if not isinstance(per_class, list) or len(per_class) > MAX_ROWS:
        return None
    rows = [_row(r) for r in per_class]
    if any(r is None for r in rows):
        return None
    if not isinstance(labels, list) or len(labels) > MAX_ROWS:
        return None
    if not isinstance(confusion, list) or len(confusion) != (len(labels) if confusion else 0):
        return None
    if not all(
        isinstance(line, list)
        and len(line) == len(labels)
        and all(isinstance(n, int) and not isinstance(n, bool) for n in line)
        for line in confusion
    ):
        return None
    return Report(
        task,
        metrics,
        [r for r in rows if r is not None],
        [str(label)[:MAX_NAME] for label in labels],
        confusion,
    )


def ordered(names: Iterable[str], vocabulary: Sequence[str]) -> list[str]:
    """Metric names in the vocabulary's order, then any others by name (once each)."""
    seen = set(names)
    known = [n for n in vocabulary if n in seen]
    return known + sorted(seen - set(vocabulary))


def columns(rows: Iterable[Mapping[str, Any]], vocabulary: Sequence[str]) -> list[str]:
    """The columns of a per-class table: every key its rows have but the label."""
    return ordered({k for row in rows for k in row if k != "label"}, vocabulary)
