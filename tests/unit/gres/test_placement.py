"""The shared placement API: requests, fits, card choice, tie-breaks and decisions."""

from __future__ import annotations

import random

import pytest

from gres.placement import (
    SCORERS,
    NodeView,
    Request,
    Shape,
    Workload,
    cards_ideal,
    cards_slurm,
    choose_node,
    decide,
    fits,
    place,
)

FULL = 1000


def node(
    name: str = "n1",
    free: tuple[int, ...] = (FULL,) * 4,
    *,
    model: str = "A100",
    cpu: int = 64_000,
    mem: int = 262_144,
    kinds: frozenset[str] = frozenset(),
) -> NodeView:
    return NodeView(name, model, cpu, mem, free, 64_000, 262_144, kinds)


def share(milli: int, cpu: int = 4_000, models: tuple[str, ...] = ()) -> Request:
    return Request(cpu, 8_192, milli, 1, models)


def whole(count: int, cpu: int = 8_000) -> Request:
    return Request(cpu, 16_384, FULL, count)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1, 0), "negative"),
        ((0, 0, 500, 0), "without gpu_count"),
        ((0, 0, 0, 1), "1..1000"),
        ((0, 0, 1001, 1), "1..1000"),
        ((0, 0, 500, 2), "cannot span 2 cards"),
    ],
)
def test_request_rejects_impossible_shapes(args: tuple[int, int, int, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Request(*args)


@pytest.mark.parametrize(
    ("request_", "kind", "fractional", "total"),
    [
        (Request(1000, 10), "cpu", False, 0),
        (share(250), "share-gpu", True, 250),
        (whole(1), "1-gpu", False, 1000),
        (whole(8), "8-gpu", False, 8000),
    ],
)
def test_request_kind(request_: Request, kind: str, fractional: bool, total: int) -> None:
    assert (request_.kind, request_.is_fractional, request_.total_gpu_milli) == (
        kind,
        fractional,
        total,
    )


def test_from_spec_parses_gpu_spec() -> None:
    req = Request.from_spec(1000, 10, 500, 1, "V100M32|V100M16|")
    assert req.gpu_models == ("V100M16", "V100M32")
    assert req.allows("V100M16")
    assert not req.allows("T4")
    assert Request.from_spec(1000, 10, 1000, 0).gpu_milli == 0


@pytest.mark.parametrize(
    ("request_", "view", "expected"),
    [
        (share(500), node(free=(400, 500)), True),
        (share(501), node(free=(400, 500)), False),
        (whole(2), node(free=(FULL, 999, FULL)), True),
        (whole(2), node(free=(FULL, 999, 0)), False),
        (share(100, models=("T4",)), node(), False),
        (share(100, models=("T4", "A100")), node(), True),
        (Request(64_001, 1), node(), False),
        (Request(1000, 262_145), node(), False),
        (Request(1000, 1), node(free=()), True),
        (share(100), node(free=(), model=""), False),
    ],
)
def test_fits(request_: Request, view: NodeView, expected: bool) -> None:
    assert fits(request_, view) is expected


@pytest.mark.parametrize(
    ("request_", "free", "slurm", "ideal"),
    [
        (share(300), (FULL, 400, 300, 900), (0,), (2,)),
        (share(300), (200, 400, 350), (1,), (2,)),
        (share(500), (200, 400), (), ()),
        (whole(2), (500, FULL, FULL, FULL), (1, 2), (1, 2)),
        (whole(3), (500, FULL, FULL), (), ()),
        (Request(1, 1), (FULL,), (), ()),
    ],
)
def test_card_choice(
    request_: Request, free: tuple[int, ...], slurm: tuple[int, ...], ideal: tuple[int, ...]
) -> None:
    view = node(free=free)
    assert cards_slurm(request_, view) == slurm
    assert cards_ideal(request_, view) == ideal


def test_place_subtracts_and_records_kind() -> None:
    after = place(share(300), node(free=(FULL, 500)), (1,))
    assert after.gpu_free_milli == (FULL, 200)
    assert after.cpu_milli_free == 60_000
    assert after.mem_mib_free == 262_144 - 8_192
    assert after.gpu_kinds == frozenset({"share-gpu"})
    with pytest.raises(ValueError, match="cannot hold"):
        place(share(600), node(free=(FULL, 500)), (1,))


def test_decide_breaks_ties_by_lowest_name_and_explains() -> None:
    nodes = [node("b"), node("a"), node("c", free=(FULL,) * 2)]
    decision = decide(whole(1), nodes, SCORERS["gpu-packing"])
    assert decision is not None
    assert decision.node == "c"  # an idle node with fewer cards packs first
    assert decision.cards == (0,)
    assert "gpu-packing" in decision.reason
    assert "3 fitting" in decision.reason
    tie = decide(whole(1), [node("b"), node("a")], SCORERS["best-fit"])
    assert tie is not None
    assert tie.node == "a"
    assert "2 tied" in tie.reason


def test_choose_node_none_when_nothing_fits() -> None:
    assert choose_node(whole(5), [node()], SCORERS["best-fit"]) is None


def test_random_fit_is_uniform_with_rng_and_first_without() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    rng = random.Random(1)  # noqa: S311
    picks = {choose_node(whole(1), nodes, SCORERS["random-fit"], rng=rng) for _ in range(60)}
    assert picks == {"n0", "n1", "n2", "n3"}
    assert choose_node(whole(1), nodes, SCORERS["random-fit"]) == "n0"


def test_registry_names() -> None:
    assert set(SCORERS) >= {
        "random-fit",
        "best-fit",
        "dot-product",
        "gpu-packing",
        "gpu-clustering",
        "fgd",
        "aipool",
        "aipool-ideal",
    }


def test_workload_keeps_most_common_shapes_up_to_coverage() -> None:
    requests = [share(500)] * 6 + [whole(1)] * 3 + [Request(2000, 1)]
    wl = Workload.from_requests(requests, coverage=0.9)
    shapes = dict(wl.shapes)
    assert shapes == {Shape(4000, 500, 1): pytest.approx(6 / 9), Shape(8000, 1000, 1): 3 / 9}
    with pytest.raises(ValueError, match="at least one"):
        Workload.from_requests([])


def test_workload_from_weights_normalises() -> None:
    wl = Workload.from_weights({Shape(0, 500, 1): 3.0, Shape(0, 1000, 1): 1.0})
    assert dict(wl.shapes) == {Shape(0, 500, 1): 0.75, Shape(0, 1000, 1): 0.25}
