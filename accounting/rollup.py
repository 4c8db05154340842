"""Splitting a job's use over hours, days and months (pure).

A job contributes to every hour it ran in, in proportion to the seconds it ran there; days and
months are sums of their hours. Its count and wait go to the hour it started in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

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


def numbers_of(u: Usage, sign: int = 1) -> tuple[int, ...]:
    """A job's numbers in :data:`NUMBERS` order."""
    return (
        u.start_time,
        u.elapsed_s,
        sign,
        u.wait_s,
        u.gpu_ucards,
        u.npu_ucards,
        u.cpus,
        u.mem_mib,
    )


#: what :func:`split` reads of each job, in this order (the last four are rates per second)
NUMBERS = (
    "start_time",
    "elapsed_s",
    "sign",
    "wait_s",
    "gpu_ucards",
    "npu_ucards",
    "cpus",
    "mem_mib",
)


def add(sums: Sums, key: Key, numbers: Sequence[int]) -> None:
    """Add one job's hourly contributions (``sign`` -1 in its numbers: take them back); the
    per-job reference :func:`split` is checked against."""
    start, elapsed, sign, wait = numbers[:4]
    rates = numbers[4:]
    first = start - start % HOUR
    for h, secs in hours(start, elapsed):
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
    row[1] += sign * wait


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


# ---------------------------------------------------------------------- in bulk
#: rollup rows as columns, in (period, start as epoch seconds, *KEY, *MEASURES) order
Columns = list[list[Any]]
#: the largest sum the int64 arithmetic below may reach; beyond it the exact Python path runs
_INT64_SAFE = 2**62


def split(keys: Sequence[Key], numbers: Sequence[Sequence[int]]) -> Columns:
    """The sums :func:`add` then :func:`with_coarser` give, for jobs given as their keys and
    :data:`NUMBERS`, as columns; computed array-wise: an import's batch of ten thousand jobs
    splits into its hours, days and months in a few NumPy passes instead of a dictionary
    update per job-hour.

    Amounts are exact integers (int64); a batch whose sums could leave that range, which no
    real job comes near, takes the Python path instead.
    """
    if not keys:
        return [[] for _ in range(2 + len(KEY) + len(MEASURES))]
    try:
        cols = np.array(numbers, dtype=np.int64).reshape(len(keys), len(NUMBERS))
    except OverflowError:
        cols = None
    if cols is None or _too_big(cols):
        sums: Sums = {}
        for key, nums in zip(keys, numbers, strict=True):
            add(sums, key, nums)
        return [
            list(c) for c in zip(*((*k, *v) for k, v in with_coarser(sums).items()), strict=True)
        ]
    ids: dict[Key, int] = {}
    kid = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), np.int64, len(keys))
    start, elapsed, signs, wait = cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3]
    rates = cols[:, 4:] * signs[:, None]
    # every job's hours: the first starts at its start, the last ends at its end
    end = start + elapsed
    first = start - start % HOUR
    nseg = np.where(elapsed > 0, (end - 1) // HOUR - start // HOUR + 1, 0)
    job = np.repeat(np.arange(len(keys)), nseg)
    seg = np.arange(len(job)) - np.repeat(np.cumsum(nseg) - nseg, nseg)
    hour = first[job] + seg * HOUR
    secs = np.minimum(hour + HOUR, end[job]) - np.maximum(hour, start[job])
    measures = np.zeros((len(job) + len(keys), len(MEASURES)), np.int64)
    measures[: len(job), 2:] = rates[job] * secs[:, None]
    measures[len(job) :, 0] = signs  # the count and the wait go to the hour the job started in
    measures[len(job) :, 1] = signs * wait
    hourly_key, hourly_at, hourly = _group(
        np.concatenate([kid[job], kid]), np.concatenate([hour, first]), measures
    )
    day = hourly_at - hourly_at % 86400
    days = np.unique(day)
    month_starts = np.array([month_of(int(d)) for d in days], np.int64)
    month = month_starts[np.searchsorted(days, day)]
    key_columns = [np.array(c, dtype=object) for c in zip(*ids, strict=True)]
    out: Columns = [[] for _ in range(2 + len(KEY) + len(MEASURES))]
    for period, (bucket_keys, at, m) in (
        ("hour", (hourly_key, hourly_at, hourly)),
        ("day", _group(hourly_key, day, hourly)),
        ("month", _group(hourly_key, month, hourly)),
    ):
        live = m.any(axis=1)
        k = bucket_keys[live]
        out[0] += [period] * len(k)
        out[1] += at[live].tolist()
        for i, column in enumerate(key_columns):
            out[2 + i] += column[k].tolist()
        for i, column in enumerate(m[live].T.tolist()):
            out[2 + len(KEY) + i] += column
    return out


def _too_big(cols: np.ndarray) -> bool:
    """Whether a sum over these jobs could leave int64 (checked in Python integers)."""
    peak = int(np.abs(cols[:, 3:]).max())
    longest = max(int(cols[:, 1].max()), HOUR)
    return peak * longest * len(cols) >= _INT64_SAFE


def _group(
    key: np.ndarray, at: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum ``values`` rows per distinct (``key``, ``at``), exactly."""
    order = np.lexsort((at, key))
    key, at, values = key[order], at[order], values[order]
    heads = np.flatnonzero(np.concatenate([[True], (key[1:] != key[:-1]) | (at[1:] != at[:-1])]))
    return key[heads], at[heads], np.add.reduceat(values, heads, axis=0)
