"""Ranges as Slurm writes them in node lists, node names and gres.conf File= values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gres.hostlist import (
    MAX_RANGE,
    compress_numbers,
    compress_paths,
    expand_hostlist,
    expand_range,
    first_host,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu1", ["gpu1"]),
        ("gpu[1-3]", ["gpu1", "gpu2", "gpu3"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("rack[1-2]a", ["rack1a", "rack2a"]),
    ],
)
def test_expand_range(text: str, expected: list[str]) -> None:
    assert expand_range(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu[3-1]", "below its start"),
        ("gpu[1-2", "not a valid range"),
        ("gpu[1,2]", "not a valid range"),
        ("a[1-2]b[1-2]", "not a valid range"),
        (f"gpu[1-{MAX_RANGE + 1}]", "longer than"),
    ],
)
def test_expand_range_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        expand_range(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ()),
        ("(null)", ()),
        ("gpu1", ("gpu1",)),
        ("gpu[1-2,4],npu1", ("gpu1", "gpu2", "gpu4", "npu1")),
        ("gpu[08-10]", ("gpu08", "gpu09", "gpu10")),
        ("rack[1-2]-n[01-02]", ("rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02")),
        ("gpu[1-2],gpu2,cpu1", ("gpu1", "gpu2", "cpu1")),
        ("a, b", ("a", "b")),
    ],
)
def test_expand_hostlist(text: str, expected: tuple[str, ...]) -> None:
    assert expand_hostlist(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("gpu[1-x]", "not a number"), ("gpu[3-1]", "below its start"), ("gpu]1[", "unbalanced")],
)
def test_expand_hostlist_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        expand_hostlist(text)


@pytest.mark.parametrize(
    ("nodelist", "first"),
    [
        ("gpu1", "gpu1"),
        ("gpu[01-03]", "gpu01"),
        ("gpu[2,4]", "gpu2"),
        ("gpu1,cpu1", "gpu1"),
        ("r[2-3]n[5-6],x", "r2n5"),
        ("n[00001-04096],x", "n00001"),
        (",gpu2", "gpu2"),
        ("", ""),
        ("None assigned", "None assigned"),
    ],
)
def test_first_host(nodelist: str, first: str) -> None:
    assert first_host(nodelist) == first
    if nodelist:
        assert first == expand_hostlist(nodelist)[0]


def test_first_host_reads_the_same_grammar() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        first_host("gpu]1[")
    with pytest.raises(ValueError, match="not a number"):
        first_host("gpu[a-b],cpu1")


@pytest.mark.parametrize(
    ("numbers", "expected"),
    [([], ""), ([3], "3"), ([0, 1, 2, 5], "0-2,5"), ([5, 1, 0, 1], "0-1,5")],
)
def test_compress_numbers(numbers: list[int], expected: str) -> None:
    assert compress_numbers(numbers) == expected


def test_compress_paths_keeps_order_and_only_merges_ascending_runs() -> None:
    paths = ["/d/nvidia0", "/d/nvidia1", "/d/nvidia3", "/d/nvidia2", "/x/card", "/d/n07"]
    assert compress_paths(paths) == [
        "/d/nvidia[0-1]",
        "/d/nvidia3",
        "/d/nvidia2",
        "/x/card",
        "/d/n07",
    ]


def _expand_path(item: str) -> list[str]:
    return expand_range(item) if "[" in item else [item]


@given(st.lists(st.integers(min_value=0, max_value=40), unique=True))
def test_compress_paths_expands_back_to_the_same_sequence(numbers: list[int]) -> None:
    paths = [f"/dev/davinci{n}" for n in numbers]
    expanded = [p for item in compress_paths(paths) for p in _expand_path(item)]
    assert expanded == paths
