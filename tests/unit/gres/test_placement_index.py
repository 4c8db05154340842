"""The shape index answers exactly as ``decide`` over every node, through any changes."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gres.placement import SCORERS, NodeView, Request, Shape, Workload, decide, place
from gres.placement_index import ShapeIndex, build
from gres.placement_tasks import EMPTY, task_model

FULL = 1000
WORKLOAD = Workload.from_weights(
    {
        Shape(4_000, 250, 1): 3.0,
        Shape(8_000, 500, 1): 2.0,
        Shape(8_000, FULL, 1): 2.0,
        Shape(16_000, FULL, 2): 1.0,
        Shape(2_000, 0, 0): 1.0,
    }
)

CARD = st.sampled_from((0, 250, 500, 750, FULL))
VIEW = st.builds(
    lambda cards, cpu, mem, model: (tuple(cards), cpu, mem, model),
    st.lists(CARD, min_size=4, max_size=4),
    st.sampled_from((0, 2_000, 8_000, 32_000)),
    st.sampled_from((0, 8_000, 64_000)),
    st.sampled_from(("A100", "V100")),
)
REQUEST = st.sampled_from(
    (
        Request(4_000, 4_000, 250, 1),
        Request(8_000, 8_000, 500, 1),
        Request(8_000, 8_000, FULL, 1),
        Request(8_000, 8_000, FULL, 2, ("A100",)),
        Request(2_000, 2_000),
        Request(16_000, 64_000, FULL, 4),
    )
)


def view(name: str, shape: tuple[tuple[int, ...], int, int, str]) -> NodeView:
    cards, cpu, mem, model = shape
    return NodeView(name, model, cpu, mem, cards, 32_000, 64_000)


@pytest.mark.parametrize("scorer", ["aipool", "aipool-ideal", "fgd", "best-fit", "gpu-packing"])
@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(VIEW, min_size=1, max_size=12),
    requests=st.lists(REQUEST, min_size=1, max_size=25),
)
def test_the_index_picks_what_decide_picks_as_jobs_are_placed(
    scorer: str,
    nodes: list[tuple[tuple[int, ...], int, int, str]],
    requests: list[Request],
) -> None:
    views = {f"n{i:02d}": view(f"n{i:02d}", s) for i, s in enumerate(nodes)}
    index = build(views.values(), SCORERS[scorer], WORKLOAD)
    for request in requests:
        want = decide(request, views.values(), SCORERS[scorer], WORKLOAD)
        got = index.best(request)
        if want is None:
            assert got is None
            continue
        assert got is not None
        assert (got.node, got.cards, got.score) == (want.node, want.cards, want.score)
        views[got.node] = place(request, views[got.node], got.cards)
        index.update(views[got.node])


@settings(max_examples=40, deadline=None)
@given(nodes=st.lists(VIEW, min_size=2, max_size=10), request=REQUEST, data=st.data())
def test_restricted_queries_and_removed_nodes(
    nodes: list[tuple[tuple[int, ...], int, int, str]], request: Request, data: st.DataObject
) -> None:
    views = {f"n{i:02d}": view(f"n{i:02d}", s) for i, s in enumerate(nodes)}
    index = build(views.values(), SCORERS["aipool"], WORKLOAD)
    gone = data.draw(st.sets(st.sampled_from(sorted(views))))
    for name in gone:
        index.remove(name)
    allowed = data.draw(st.sets(st.sampled_from(sorted(views))))
    left = [v for n, v in views.items() if n not in gone]
    want = decide(request, [v for v in left if v.name in allowed], SCORERS["aipool"], WORKLOAD)
    got = index.best_among(request, allowed.__contains__)
    assert (got and got.node) == (want and want.node)
    whole = decide(request, left, SCORERS["aipool"], WORKLOAD)
    assert (index.best(request) and index.best(request).node) == (whole and whole.node)
    assert len(index) == len(left)


def test_alike_nodes_are_scored_once() -> None:
    views = [
        NodeView(f"n{i:03d}", "A100", 32_000, 64_000, (FULL,) * 8, 32_000, 64_000)
        for i in range(200)
    ]
    index = build(views, SCORERS["aipool"], WORKLOAD)
    request = Request(8_000, 8_000, 500, 1)
    first = index.best(request)
    assert first is not None
    assert first.node == "n000"
    assert index.scorer_calls == 1
    index.update(place(request, views[0], first.cards))
    assert index.best(request).node == "n000"  # the partly used node packs on
    assert index.scorer_calls == 2


def test_random_ties_cannot_be_indexed() -> None:
    with pytest.raises(ValueError, match="random"):
        ShapeIndex(SCORERS["random-fit"], EMPTY)


def test_the_task_model_is_rounded_and_interned() -> None:
    a = Counter({Shape(4_000, 250, 1): 500, Shape(8_000, FULL, 1): 500})
    b = Counter({Shape(4_000, 250, 1): 501, Shape(8_000, FULL, 1): 499})
    ma, mb = task_model(a, cpu_per_gpu_milli=12.3456), task_model(b, cpu_per_gpu_milli=12.34)
    assert ma is mb  # 50.1 % rounds to 50 %: the same model, the same caches
    assert dict(ma.shapes) == {Shape(4_000, 250, 1): 0.5, Shape(8_000, FULL, 1): 0.5}
    assert ma.cpu_per_gpu_milli == 12.3
    c = task_model(Counter({Shape(4_000, 250, 1): 600, Shape(8_000, FULL, 1): 400}))
    assert c is not ma
    assert task_model({}) is EMPTY
    rare = Counter({Shape(0, 0, 0): 1, Shape(4_000, 250, 1): 99})
    assert [s for s, _ in task_model(rare).shapes] == [Shape(4_000, 250, 1)]  # 95 % coverage
