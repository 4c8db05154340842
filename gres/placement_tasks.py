"""The task model live placement scores against: the shapes of the work a cluster sees.

FGD measures a node's fragmentation against a distribution of task shapes ("typical tasks").
The trace simulator can take it from a whole trace; a live daemon knows only what it sees:
the jobs queued and running, and those that ended within its history window.
:func:`task_model` turns the counted shapes of those jobs into a :class:`Workload` the way
:meth:`Workload.from_requests` does (the commonest shapes covering 95 % of tasks), then
rounds it: probabilities to hundredths and the CPU and memory per GPU milli to three
significant digits. Every scorer cache is keyed by the workload, so a model that moved with
each job would empty them all; a rounded one only changes when the mix does. Equal models
are the same object (interned), so caches keyed by identity hit across cycles.

A daemon keeps its model from cycle to cycle and takes a new one only when the mix has
moved by more than :data:`TOLERANCE` (:func:`settled`): near a rounding step a model would
otherwise flip back and forth with every job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gres.placement_model import Shape, Workload

#: Probabilities are rounded to multiples of this.
STEP = 0.01
#: The commonest shapes that together make up this share of the tasks are kept (FGD's 95 %).
COVERAGE = 0.95

_Key = tuple[tuple[tuple[Shape, float], ...], float, float]
_INTERNED: dict[_Key, Workload] = {}
_MAX_INTERNED = 512

EMPTY = Workload(())
#: How far the mix may move (total variation of the shape distribution; relative change of
#: the CPU and memory per GPU milli) before a kept model is replaced.
TOLERANCE = 0.02


def task_model(
    counts: Mapping[Shape, int],
    *,
    cpu_per_gpu_milli: float = 0.0,
    mem_per_gpu_milli: float = 0.0,
    coverage: float = COVERAGE,
    step: float = STEP,
) -> Workload:
    """The rounded, interned workload of tasks counted by shape.

    ``cpu_per_gpu_milli`` and ``mem_per_gpu_milli`` are the mean CPU milli and memory MiB the
    GPU work brings per GPU milli (AIPool's stranding measure); see :func:`per_gpu_milli`.
    """
    kept = {s: n for s, n in counts.items() if n > 0}
    if not kept:
        return EMPTY
    total = sum(kept.values())
    ranked = sorted(kept.items(), key=_rank, reverse=True)
    chosen: list[tuple[Shape, int]] = []
    covered = 0
    for shape, n in ranked:
        if covered >= coverage * total:
            break
        chosen.append((shape, n))
        covered += n
    shapes = []
    for shape, n in sorted(chosen, key=lambda item: _order(item[0])):
        p = round(n / covered / step) * step
        if p > 0:
            shapes.append((shape, round(p, 6)))
    key: _Key = (tuple(shapes), _sig3(cpu_per_gpu_milli), _sig3(mem_per_gpu_milli))
    found = _INTERNED.get(key)
    if found is None:
        if len(_INTERNED) >= _MAX_INTERNED:
            _INTERNED.clear()
        found = _INTERNED[key] = Workload(key[0], key[1], key[2])
    return found


def drift(a: Workload, b: Workload) -> float:
    """How far apart two models are: the total variation distance of their shape
    distributions, or the relative change of their CPU or memory per GPU milli if larger."""
    pa, pb = dict(a.shapes), dict(b.shapes)
    tv = 0.5 * sum(abs(pa.get(s, 0.0) - pb.get(s, 0.0)) for s in pa.keys() | pb.keys())
    rel = max(
        _relative(a.cpu_per_gpu_milli, b.cpu_per_gpu_milli),
        _relative(a.mem_per_gpu_milli, b.mem_per_gpu_milli),
    )
    return max(tv, rel)


def settled(previous: Workload | None, current: Workload, tolerance: float = TOLERANCE) -> Workload:
    """``previous`` while ``current`` is within ``tolerance`` of it, else ``current``."""
    if previous is None or previous is current:
        return current
    return previous if drift(previous, current) <= tolerance else current


def _relative(x: float, y: float) -> float:
    if x == y:
        return 0.0
    return abs(x - y) / max(abs(x), abs(y))


def per_gpu_milli(cpu_milli: float, mem_mib: float, gpu_milli: float) -> tuple[float, float]:
    """CPU milli and memory MiB per GPU milli of GPU work (0 when there is none)."""
    if gpu_milli <= 0:
        return 0.0, 0.0
    return cpu_milli / gpu_milli, mem_mib / gpu_milli


def _sig3(x: float) -> float:
    if x <= 0 or not math.isfinite(x):
        return 0.0
    return round(x, 2 - math.floor(math.log10(x)))


def _rank(item: tuple[Shape, int]) -> tuple[int, int, int, int, tuple[str, ...]]:
    shape, count = item
    return (count, shape.cpu_milli, shape.gpu_milli, shape.gpu_count, shape.gpu_models)


def _order(shape: Shape) -> tuple[int, int, int, tuple[str, ...]]:
    return (shape.gpu_count, shape.gpu_milli, shape.cpu_milli, shape.gpu_models)
