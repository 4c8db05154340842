"""The array-wise split of a batch into hour/day/month sums is the per-job reference's, exactly."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.rollup import (
    HOUR,
    KEY,
    MEASURES,
    NUMBERS,
    Key,
    Sums,
    add,
    split,
    with_coarser,
)

T0 = 1_793_491_200  # 2026-11-01 00:00 UTC: the jobs below straddle a month's end
OCTOBER = 1_790_812_800  # 2026-10-01 00:00 UTC

keys = st.tuples(
    st.just("aipool"),
    st.sampled_from(["alice", "bob"]),
    st.sampled_from(["nlp", "vision"]),
    st.just("research"),
    st.sampled_from(["gpu", "npu"]),
    st.sampled_from(["", "a100"]),
    st.sampled_from(["", "910b"]),
)
jobs = st.tuples(
    keys,
    st.tuples(
        st.integers(T0 - 3 * 86400, T0 + 3 * 86400),  # start
        st.integers(0, 3 * 86400),  # elapsed
        st.sampled_from([1, 1, -1]),  # added, or taken back
        st.integers(0, 7200),  # wait
        st.sampled_from([0, 31_250, 1_000_000, 8_000_000]),  # GPU micro-cards
        st.sampled_from([0, 250_000, 1_000_000]),  # NPU micro-cards
        st.integers(0, 64),  # CPUs
        st.integers(0, 512_000),  # MiB
    ),
)


def reference(batch: list[tuple[Key, tuple[int, ...]]]) -> Sums:
    sums: Sums = {}
    for key, numbers in batch:
        add(sums, key, numbers)
    return with_coarser(sums)


def as_sums(columns: list[list[object]]) -> dict[tuple[object, ...], list[object]]:
    width = 2 + len(KEY)
    return {tuple(r[:width]): list(r[width:]) for r in zip(*columns, strict=True)}


@settings(max_examples=150, deadline=None)
@given(st.lists(jobs, max_size=40))
def test_split_equals_the_per_job_sums(batch: list[tuple[Key, tuple[int, ...]]]) -> None:
    columns = split([k for k, _ in batch], [n for _, n in batch])
    assert len(columns) == 2 + len(KEY) + len(MEASURES)
    assert as_sums(columns) == reference(batch)


def test_a_job_over_a_month_end_splits_by_hour_day_and_month() -> None:
    key: Key = ("aipool", "alice", "nlp", "research", "gpu", "a100", "")
    start = T0 - HOUR // 2  # 2026-10-31 23:30, for 1 h on one card, 2 CPUs
    numbers = dict(zip(NUMBERS, (start, HOUR, 1, 60, 1_000_000, 0, 2, 0), strict=True))
    got = as_sums(split([key], [tuple(numbers.values())]))
    half = 1800 * 1_000_000
    assert got[("hour", T0 - HOUR, *key)] == [1, 60, half, 0, 3600, 0]
    assert got[("hour", T0, *key)] == [0, 0, half, 0, 3600, 0]
    assert got[("month", OCTOBER, *key)] == [1, 60, half, 0, 3600, 0]
    assert got[("month", T0, *key)] == [0, 0, half, 0, 3600, 0]
    assert len(got) == 6


def test_sums_beyond_int64_take_the_exact_path() -> None:
    key: Key = ("aipool", "alice", "nlp", "research", "gpu", "a100", "")
    huge = 2**61  # micro-cards no job holds; the sums leave int64
    batch = [(key, (T0, 2 * HOUR, 1, 0, huge, 0, 0, 0))] * 3
    columns = split([k for k, _ in batch], [n for _, n in batch])
    assert as_sums(columns) == reference(batch)
    assert as_sums(columns)[("month", T0, *key)][2] == 3 * huge * 2 * HOUR


def test_jobs_taken_back_leave_no_rows() -> None:
    key: Key = ("aipool", "bob", "vision", "research", "npu", "", "910b")
    job = (T0 + 100, 5000, 1, 30, 0, 1_000_000, 4, 1000)
    back = (*job[:2], -1, *job[3:])
    assert as_sums(split([key, key], [job, back])) == {}
    assert split([], []) == [[] for _ in range(2 + len(KEY) + len(MEASURES))]
