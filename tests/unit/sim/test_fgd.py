"""The FGD protocol: arrival sequence, checkpoints, and placement through the shared code."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from gres.placement import SCORERS, Request, Workload, decide
from sim.cluster import RAW, SHARDS, Cluster, Grid
from sim.fgd import checkpoints, ranked_nodes, run_one, task_sequence, workload_of
from sim.placer import CardChoice, Placer
from sim.runner import Job, Variant, parse_seeds, run_matrix, summarise
from sim.trace import NodeSpec, Task

CAPACITY = 17_000


def rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 - reproducible simulation


def demand(sequence: list[Task]) -> int:
    return sum(t.request.total_gpu_milli for t in sequence)


@pytest.mark.parametrize("ratio", [0.5, 1.3, 2.0])
def test_sequence_reaches_the_ratio_without_passing_a_card(tasks: list[Task], ratio: float) -> None:
    sequence = task_sequence(tasks, CAPACITY, seed=42, ratio=ratio)
    assert demand(sequence) <= ratio * CAPACITY + 8_000  # an 8-card draw may overshoot
    assert demand(sequence) > ratio * CAPACITY - 8_000  # or drop one 8-card task too many
    assert sequence == task_sequence(tasks, CAPACITY, seed=42, ratio=ratio)
    assert sequence != task_sequence(tasks, CAPACITY, seed=43, ratio=ratio)


def test_sequence_starts_with_the_whole_trace_when_topping_up(tasks: list[Task]) -> None:
    sequence = task_sequence(tasks, CAPACITY, seed=1, ratio=4.0)
    assert sorted(t.name for t in sequence[: len(tasks)]) == sorted(t.name for t in tasks)


def test_sequence_needs_gpu_work(tasks: list[Task]) -> None:
    cpu_only = [t for t in tasks if not t.request.gpu_count]
    with pytest.raises(ValueError, match="no GPUs"):
        task_sequence(cpu_only, CAPACITY, seed=1)


def test_checkpoints_average_the_tasks_that_round_to_each_percent() -> None:
    arrived = np.array([0.0, 10.0, 11.0, 30.0, 50.0])
    allocated = np.array([0.0, 10.0, 11.0, 20.0, 20.0])
    curve = checkpoints(arrived, allocated, 1000.0, 5)
    assert curve[1] == pytest.approx((1.0 + 1.1) / 2)
    assert curve[2] == pytest.approx((1.0 + 1.1 + 2.0) / 3)  # nothing at 2 %: take 1-3 %
    assert curve[3] == pytest.approx(2.0)
    assert curve[5] == pytest.approx(2.0)
    assert math.isnan(checkpoints(arrived, allocated, 1000.0, 9)[8])
    assert checkpoints(arrived, allocated, 1000.0, 9)[9] == pytest.approx(2.0)  # the end state


def test_ranked_nodes_are_a_seeded_permutation(nodes: list[NodeSpec]) -> None:
    ranked = ranked_nodes(nodes, 42)
    assert sorted(n.name.split("-", 1)[1] for n in ranked) == sorted(n.name for n in nodes)
    assert ranked == ranked_nodes(nodes, 42)
    assert {n.name[0] for n in ranked} <= set("01234")


@pytest.mark.parametrize("policy", sorted(SCORERS))
@pytest.mark.parametrize("grid", [RAW, SHARDS])
def test_placer_decides_as_the_shared_decide(
    nodes: list[NodeSpec], tasks: list[Task], policy: str, grid: Grid
) -> None:
    """The cached, array-filtered placer picks what ``gres.placement.decide`` picks."""
    g = grid
    cluster = Cluster(ranked_nodes(nodes, 7), g)
    workload = workload_of(tasks, g)
    placer = Placer(cluster, SCORERS[policy], workload, rng(3))
    reference_rng = rng(3)
    for task in task_sequence(tasks, CAPACITY, seed=7):
        request = g.snap(task.request)
        views = [cluster.view(i) for i in range(len(cluster.names))]
        expected = decide(request, views, SCORERS[policy], workload, reference_rng)
        chosen = placer.choose(request)
        if expected is None:
            assert chosen is None
            continue
        assert chosen is not None
        assert cluster.names[chosen[0]] == expected.node
        assert chosen[1] == expected.cards
        cluster.allocate(chosen[0], request, chosen[1])


def test_slurm_card_choice_takes_the_lowest_card() -> None:
    cluster = Cluster([NodeSpec("n", 8_000, 8_000, 2, "A")])
    cluster.allocate(0, Request(1, 1, 400, 1), (1,))
    placer = Placer(cluster, SCORERS["best-fit"], Workload(()), rng(0), CardChoice.SLURM)
    assert placer.choose(Request(1, 1, 500, 1)) == (0, (0,))
    placer.card_choice = CardChoice.POLICY
    assert placer.choose(Request(1, 1, 500, 1)) == (0, (1,))


def test_run_one_reports_allocation_and_failures(nodes: list[NodeSpec], tasks: list[Task]) -> None:
    result = run_one(nodes, tasks, "aipool", 42)
    assert result.tasks == len(task_sequence(tasks, CAPACITY, 42))
    assert 0 < result.failed < result.tasks
    assert len(result.curve) == 131
    assert 50 < result.at(130) <= 100
    assert np.array_equal(result.requested, result.curve, equal_nan=True)
    rounded = run_one(nodes, tasks, "aipool", 42, grid=SHARDS)
    assert np.nansum(rounded.requested) <= np.nansum(rounded.curve)


def test_matrix_in_processes_matches_one_process(nodes: list[NodeSpec], tasks: list[Task]) -> None:
    variant = Variant(RAW, CardChoice.POLICY)
    jobs = [Job(p, s, variant) for p in ("best-fit", "fgd") for s in (42, 43)]
    serial = run_matrix(nodes, tasks, jobs, workers=1)
    parallel = run_matrix(nodes, tasks, jobs, workers=2)
    for (_, one), (_, other) in zip(serial, parallel, strict=True):
        assert np.array_equal(one.curve, other.curve, equal_nan=True)
    summary = summarise(serial)
    assert [s.policy for s in summary] == ["best-fit", "fgd"]
    assert summary[0].seeds == 2


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("42-44", (42, 43, 44)), ("42,50", (42, 50)), ("1-2,2,5", (1, 2, 5)), ("7", (7,))],
)
def test_parse_seeds(text: str, seeds: tuple[int, ...]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(
    ("text", "message"), [("x", "look like"), ("5-3", "backwards"), ("", "no")]
)
def test_parse_seeds_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_seeds(text)
