"""Splitting a job's use over hours, days and months (pure).

A job contributes to every hour it ran in, in proportion to the seconds it ran there; days and
months are sums of their hours. Its count and wait go to the hour it started in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from accounting.meter import Usage

HOUR = 3600
PERIODS = ("hour", "day", "month")

#: attribution columns of a rollup row, in key order
KEY = ("cluster", "user", "account", "domain", "partition", "gpu_type", "npu_type")
#: summed columns of a rollup row
MEASURES = ("jobs", "wait_s", "gpu_ucs", "npu_ucs", "cpu_s", "mem_mib_s")

Key = tuple[str, str, str, str, str, str, str]
#: (period, bucket start as epoch seconds) + attribution
BucketKey = tuple[str, int, str, str, str, str, str, str, str]
Sums = dict[BucketKey, list[int]]


def hours(start: int, seconds: int) -> Iterator[tuple[int, int]]:
    """``(hour start, seconds in that hour)`` for a run of ``seconds`` from epoch ``start``."""
    t, end = start, start + seconds
    while t < end:
        h = t - t % HOUR
        nxt = min(h + HOUR, end)
        yield h, nxt - t
        t = nxt


def day_of(epoch: int) -> int:
    return epoch - epoch % 86400


def month_of(epoch: int) -> int:
    d = datetime.fromtimestamp(epoch, UTC)
    return int(datetime(d.year, d.month, 1, tzinfo=UTC).timestamp())


def key_of(u: Usage) -> Key:
    return (u.cluster, u.user, u.account, u.domain, u.partition, u.gpu_type, u.npu_type)


def add(sums: Sums, u: Usage, sign: int = 1) -> None:
    """Add (``sign=1``) or take back (``-1``) one job's hourly contributions."""
    key = key_of(u)
    start = int(u.start_time.timestamp())
    first = start - start % HOUR
    rates = (u.gpu_ucards, u.npu_ucards, u.cpus, u.mem_mib)
    for h, secs in hours(start, u.elapsed_s):
        row = sums.get(("hour", h, *key))
        if row is None:
            row = sums[("hour", h, *key)] = [0, 0, 0, 0, 0, 0]
        row[2] += sign * rates[0] * secs
        row[3] += sign * rates[1] * secs
        row[4] += sign * rates[2] * secs
        row[5] += sign * rates[3] * secs
    row = sums.get(("hour", first, *key))
    if row is None:
        row = sums[("hour", first, *key)] = [0, 0, 0, 0, 0, 0]
    row[0] += sign
    row[1] += sign * u.wait_s


def with_coarser(hourly: Sums) -> Sums:
    """The hourly sums plus their daily and monthly totals, zero rows dropped."""
    out: Sums = {}
    coarse: dict[BucketKey, list[int]] = defaultdict(lambda: [0] * len(MEASURES))
    months: dict[int, int] = {}
    for k, v in hourly.items():
        if not any(v):
            continue
        out[k] = v
        day = day_of(k[1])
        month = months.get(day)
        if month is None:
            month = months[day] = month_of(day)
        for period, at in (("day", day), ("month", month)):
            acc = coarse[(period, at, *k[2:])]
            for i, x in enumerate(v):
                acc[i] += x
    out.update((k, v) for k, v in coarse.items() if any(v))
    return out


def rollup(usages: Iterable[Usage]) -> Sums:
    """Hour, day and month sums of some jobs (tests and the benchmark's cross-check)."""
    sums: Sums = {}
    for u in usages:
        add(sums, u)
    return with_coarser(sums)
