"""Measures of a queue simulation: allocation under overload, waits, fairness."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence

from sim.queue import QueueRun, SimJob


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one gets everything."""
    xs = [v for v in values if not math.isnan(v)]
    if not xs or not any(xs):
        return math.nan
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def overload_allocation(run: QueueRun) -> tuple[float, float]:
    """Time-weighted GPU allocation (%) while demand exceeded capacity, and for how long (s).

    Demand is what running and waiting jobs ask for; a sample holds until the next one.
    """
    cap = run.capacity_gpu
    weighted = span = 0.0
    for here, nxt in zip(run.samples, run.samples[1:], strict=False):
        dt = nxt.time - here.time
        if dt > 0 and here.demand > cap:
            weighted += here.allocated / cap * dt
            span += dt
    return (100 * weighted / span if span else math.nan), span


def mean_allocation(run: QueueRun) -> float:
    """Time-weighted GPU allocation (%) from the first to the last event."""
    weighted = span = 0.0
    for here, nxt in zip(run.samples, run.samples[1:], strict=False):
        dt = nxt.time - here.time
        weighted += here.allocated * dt
        span += dt
    return 100 * weighted / (span * run.capacity_gpu) if span else math.nan


def series(run: QueueRun, points: int = 400) -> list[tuple[float, float, float]]:
    """(hours, allocation %, demand %) at up to ``points`` evenly spread samples."""
    if not run.samples:
        return []
    cap = run.capacity_gpu
    step = max(1, len(run.samples) // points)
    t0 = run.samples[0].time
    return [
        (
            round((s.time - t0) / 3600, 4),
            round(100 * s.allocated / cap, 2),
            round(100 * s.demand / cap, 2),
        )
        for s in run.samples[::step]
    ]


def waits(jobs: Iterable[SimJob], key: Callable[[SimJob], str]) -> dict[str, dict[str, float]]:
    """Queueing delay (first start - submit) per group: count, mean, median, p95, unstarted."""
    groups: dict[str, list[SimJob]] = {}
    for job in jobs:
        groups.setdefault(key(job), []).append(job)
    out: dict[str, dict[str, float]] = {}
    for name in sorted(groups):
        started = [j.first_start - j.submit for j in groups[name] if j.first_start is not None]
        out[name] = {
            "jobs": len(groups[name]),
            "mean_s": statistics.fmean(started) if started else math.nan,
            "median_s": statistics.median(started) if started else math.nan,
            "p95_s": _percentile(started, 95),
            "unstarted": len(groups[name]) - len(started),
        }
    return out


def service_ratio(jobs: Iterable[SimJob], key: Callable[[SimJob], str]) -> dict[str, float]:
    """Per group: GPU-seconds run / GPU-seconds spent in the system (1 = never waited)."""
    got: dict[str, float] = {}
    spent: dict[str, float] = {}
    for job in jobs:
        if job.first_start is None or job.end is None or not job.gpu:
            continue
        ran = sum(e - s for s, e in job.runs)
        k = key(job)
        got[k] = got.get(k, 0.0) + job.gpu * ran
        spent[k] = spent.get(k, 0.0) + job.gpu * max(job.end - job.submit, ran)
    return {k: got[k] / spent[k] for k in sorted(got) if spent[k] > 0}


def rounded(
    data: Mapping[str, Mapping[str, float]], digits: int = 2
) -> dict[str, dict[str, float]]:
    return {k: {f: round(v, digits) for f, v in row.items()} for k, row in data.items()}


def _percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, math.ceil(pct / 100 * len(ordered)) - 1))
    return ordered[rank]
