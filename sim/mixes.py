"""Task lists of other mixes, drawn from a trace: more shares of a card, more several-card
tasks, more CPU-only work.

The published subsets vary one class each (``gpushare100``, ``multigpu50``, ``cpu050``);
:func:`mix` makes a list of the same length with the shares of four classes asked for —
CPU-only tasks, shares of one card, one whole card, several cards — each task drawn (with
replacement, seeded) from the trace's tasks of its class, so every task is a real one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace

from sim.trace import Task

CLASSES = ("cpu", "share", "one", "multi")

#: The mixes the benchmarks add to the published task lists: (name, class weights).
MIXES: Mapping[str, Mapping[str, float]] = {
    "mix-share70": {"cpu": 0.1, "share": 0.7, "one": 0.15, "multi": 0.05},
    "mix-multi30": {"cpu": 0.1, "share": 0.3, "one": 0.3, "multi": 0.3},
    "mix-cpu30": {"cpu": 0.3, "share": 0.35, "one": 0.25, "multi": 0.1},
}


def class_of(task: Task) -> str:
    r = task.request
    if r.gpu_count == 0:
        return "cpu"
    if r.is_fractional:
        return "share"
    return "one" if r.gpu_count == 1 else "multi"


def mix(tasks: Sequence[Task], weights: Mapping[str, float], *, seed: int = 0) -> list[Task]:
    """As many tasks as ``tasks``, in the class shares ``weights`` (normalised), drawn from
    the tasks of each class, renamed ``mix-<k>`` (the protocol orders tasks by name)."""
    pools: dict[str, list[Task]] = {c: [] for c in CLASSES}
    for t in sorted(tasks, key=lambda t: t.name):
        pools[class_of(t)].append(t)
    unknown = set(weights) - set(CLASSES)
    if unknown:
        raise ValueError(f"unknown task classes {sorted(unknown)}; known: {', '.join(CLASSES)}")
    missing = [c for c, w in weights.items() if w > 0 and not pools[c]]
    if missing:
        raise ValueError(f"the trace has no tasks of class {', '.join(missing)}")
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0:
        raise ValueError("class weights must add up to more than zero")
    rng = random.Random(seed)  # noqa: S311 - reproducible test data
    classes = [c for c in CLASSES if weights.get(c, 0) > 0]
    shares = [weights[c] / total for c in classes]
    out = []
    for k in range(len(tasks)):
        pool = pools[rng.choices(classes, shares)[0]]
        out.append(replace(pool[rng.randrange(len(pool))], name=f"mix-{k:05d}"))
    return out
