"""The virtual cluster: the shard grid, the fit pre-filter, allocation bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gres.placement import Request, fits
from sim.cluster import RAW, SHARDS, Cluster, Grid
from sim.trace import NodeSpec


def spec(name: str = "n1", gpus: int = 2, model: str = "A100", cpu: int = 32_000) -> NodeSpec:
    return NodeSpec(name, cpu, 65_536, gpus, model)


@pytest.mark.parametrize(
    ("milli", "units"), [(1, 1), (31, 1), (32, 2), (500, 16), (810, 26), (1000, 32)]
)
def test_shards_round_up(milli: int, units: int) -> None:
    assert SHARDS.to_units(milli) == units


@given(st.integers(0, 32), st.integers(1, 32))
def test_floored_milli_keeps_fits_exact_on_the_shard_grid(free: int, need: int) -> None:
    assert (free >= need) == (SHARDS.to_milli(free) >= SHARDS.to_milli(need))


def test_snap_puts_a_request_on_the_grid() -> None:
    assert SHARDS.snap(Request(1, 1, 810, 1)).gpu_milli == 26 * 1000 // 32
    assert SHARDS.snap(Request(1, 1, 1000, 2)).gpu_milli == 1000
    same = Request(1, 1, 810, 1)
    assert RAW.snap(same) is same


requests = st.one_of(
    st.builds(lambda c: Request(c, 1_000), st.integers(0, 40_000)),
    st.builds(
        lambda c, m, models: Request(c, 1_000, m, 1, models),
        st.integers(0, 40_000),
        st.integers(1, 999),
        st.sampled_from([(), ("T4",), ("A100", "T4")]),
    ),
    st.builds(lambda n: Request(1_000, 1_000, 1000, n), st.integers(1, 4)),
)


@given(st.lists(requests, max_size=12), requests, st.sampled_from([RAW, SHARDS]))
def test_candidates_agree_with_fits(placed: list[Request], probe: Request, grid: Grid) -> None:
    cluster = Cluster([spec("a", 2, "T4"), spec("b", 4), spec("c", 0, ""), spec("d", 1)], grid)
    for raw in placed:
        req = grid.snap(raw)
        for i in range(len(cluster.names)):
            view = cluster.view(i)
            if fits(req, view):
                cards = tuple(k for k, f in enumerate(view.gpu_free_milli) if f >= req.gpu_milli)
                cluster.allocate(i, req, cards[: req.gpu_count])
                break
    probe = grid.snap(probe)
    expected = [i for i in range(len(cluster.names)) if fits(probe, cluster.view(i))]
    assert cluster.candidates(probe).tolist() == expected


def test_allocate_and_release_round_trip() -> None:
    cluster = Cluster([spec()], SHARDS)
    req = SHARDS.snap(Request(4_000, 1_024, 300, 1))
    cluster.allocate(0, req, (1,))
    view = cluster.view(0)
    assert view.gpu_free_milli == (1000, (32 - 10) * 1000 // 32)
    assert view.gpu_kinds == frozenset({"share-gpu"})
    assert cluster.allocated_units == 10
    assert cluster.version[0] == 1
    cluster.release(0, req, (1,))
    assert cluster.view(0).gpu_free_milli == (1000, 1000)
    assert cluster.view(0).gpu_kinds == frozenset()
    assert cluster.allocated_units == 0


@pytest.mark.parametrize(
    ("request_", "cards", "message"),
    [
        (Request(1, 1, 1000, 2), (0,), "needs 2 cards"),
        (Request(40_000, 1), (), "over- or under-allocated"),
        (Request(1, 1, 600, 1), (0,), "cannot hold"),
    ],
)
def test_allocation_errors(request_: Request, cards: tuple[int, ...], message: str) -> None:
    cluster = Cluster([spec()])
    cluster.allocate(0, Request(1, 1, 500, 1), (0,))
    with pytest.raises(ValueError, match=message):
        cluster.allocate(0, request_, cards)


def test_a_refused_allocation_changes_nothing() -> None:
    cluster = Cluster([spec()])
    cluster.allocate(0, Request(1, 1, 500, 1), (0,))
    with pytest.raises(ValueError, match="cannot hold"):
        cluster.allocate(0, Request(1, 1, 600, 1), (0,))
    assert cluster.view(0).gpu_free_milli == (500, 1000)
    assert cluster.view(0).cpu_milli_free == 31_999
