"""placement: every job the admission hook deferred is pinned to the scorer's node and started.

Jobs are built as the collector reports them: ``deferred`` (tagged by the hook, waiting for
its begin time), pending with reason ``BeginTime``. A plan must pin each to the node
``gres.placement.decide`` picks over all nodes that fit, against the daemon's task model,
and start it (``StartTime=now``) in the same update; held ones stay held.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from gres.placement import SCORERS, decide
from slurm_plugins.client.models import Job, JobState
from slurm_plugins.policy.cluster import ClusterView
from slurm_plugins.policy.collect import job_info
from slurm_plugins.policy.engine import build_policies
from slurm_plugins.policy.placing import kind_of, request_of, task_counts, view_of
from slurm_plugins.policy.plan import JobChange
from slurm_plugins.policy.resources import Amounts, Demand
from slurm_plugins.policy.snapshot import DaemonState, UsageRecord
from tests.unit.policy.builders import (
    NOW,
    apply_state,
    config,
    gpu_node,
    job,
    npu_node,
    pol,
    run,
    running,
    snap,
)

PLACE = pol("placement", node_weights=False)


def deferred(job_id: int, **kw: object) -> object:
    return job(job_id, reason="BeginTime", deferred=True, **kw)


def changes(p: object) -> dict[int, JobChange]:
    return {c.job_id: c for c in p.job_changes}  # type: ignore[attr-defined]


def test_every_shape_is_pinned_and_started_in_one_update() -> None:
    nodes = [
        gpu_node("gpu1"),
        replace(gpu_node("gpu2"), card_used=(32, 16, 0, 0)),
        npu_node("npu1"),
        npu_node("npu2", npus={"910b": 2, "910b_vir05": 4}),
    ]
    jobs = [
        running(50, "gpu2", gpus=1, cards=()),
        deferred(1, gpus=1, cpus=2),
        deferred(2, shards=8),
        deferred(3, gpus=2, cpus=4),
        deferred(4, partition="npu", npus=2, npu_type="910b"),
        deferred(5, partition="npu", npus=1, npu_type="910b_vir05"),
        deferred(6, cpus=2),  # CPU work on GPU nodes strands cards: placed as well
    ]
    p = run(snap(jobs, nodes), PLACE)
    got = changes(p)
    assert set(got) == {1, 2, 3, 4, 5, 6}
    assert all(c.start_now for c in got.values())
    assert got[2].req_nodes == "gpu2"  # the half-used card, not a fresh one
    assert got[5].req_nodes == "npu2"  # the only node with vNPUs
    assert {c.req_nodes for c in got.values()} <= {"gpu1", "gpu2", "npu1", "npu2"}
    assert p.releases == ()
    assert p.holds == ()


def test_the_pin_is_decides_choice_against_the_task_model() -> None:
    nodes = [
        replace(gpu_node("gpu1"), alloc_cpus=14),  # cards free but its CPUs nearly gone
        gpu_node("gpu2"),
        replace(gpu_node("gpu3"), card_used=(0, 0, 0, 8)),
    ]
    jobs = [deferred(1, gpus=1, cpus=2), deferred(2, shards=16, cpus=1)]
    s = snap(jobs, nodes)
    kinds = {"gpu": kind_of(nodes)}
    model = task_counts(s.jobs, (), kinds)["gpu"].model()
    view = ClusterView(s.nodes)
    want = decide(
        request_of(jobs[0].demand),
        [view_of(fn, "gpu") for fn in view.nodes.values()],
        SCORERS["aipool"],
        model,
    )
    assert want is not None
    assert want.node != "gpu1"  # the CPUs it would leave could not feed its 4 cards
    p = run(s, PLACE)
    assert changes(p)[1].req_nodes == want.node


def test_jobs_of_one_cycle_see_each_other() -> None:
    nodes = [replace(gpu_node("gpu1", gpus=1), card_used=(16,)), gpu_node("gpu2", gpus=1)]
    jobs = [deferred(1, shards=16), deferred(2, shards=16), deferred(3, shards=16)]
    got = changes(run(snap(jobs, nodes), PLACE))
    assert [got[i].req_nodes for i in (1, 2, 3)] == ["gpu1", "gpu2", "gpu2"]


def test_a_job_that_fits_nowhere_is_started_unpinned() -> None:
    nodes = [replace(gpu_node("gpu1"), card_used=(32, 32, 32, 32))]
    got = changes(run(snap([deferred(1, gpus=1)], nodes), PLACE))
    assert got[1].start_now
    assert got[1].req_nodes is None


def test_a_held_job_stays_held_and_waiting() -> None:
    from slurm_plugins.policy.snapshot import Tenant

    tenant = Tenant("nlp", nominal={"gpu": 1}, borrowing_limit={"gpu": 0})
    jobs = [running(9, "gpu1", gpus=1), deferred(1, gpus=1)]
    p = run(snap(jobs, [gpu_node("gpu1")], tenants=[tenant]), "capacity", PLACE)
    assert [h.job_id for h in p.holds] == [1]
    assert not any(c.start_now for c in p.job_changes)


def test_a_users_node_list_is_kept_and_its_wait_ended() -> None:
    own = deferred(1, gpus=1, required_nodes=("gpu2",))
    got = changes(run(snap([own], [gpu_node("gpu1"), gpu_node("gpu2")]), PLACE))
    assert got[1].start_now
    assert got[1].req_nodes is None


def test_a_multi_node_job_gets_one_node_each() -> None:
    nodes = [gpu_node("gpu1"), gpu_node("gpu2"), replace(gpu_node("gpu3"), card_used=(32,) * 4)]
    got = changes(run(snap([deferred(1, gpus=4, node_count=2)], nodes), PLACE))
    assert got[1].req_nodes == "gpu1,gpu2"


def test_a_gang_goes_under_the_tightest_switch_that_has_room() -> None:
    # first nodes by score would be gpu1+gpu2 across switches; leaf2 has exactly room
    nodes = [
        gpu_node("gpu1", switch="leaf1"),
        gpu_node("gpu2", switch="leaf2"),
        gpu_node("gpu3", switch="leaf1"),
        gpu_node("gpu4", switch="leaf2"),
        gpu_node("gpu5", switch="leaf1"),
    ]
    got = changes(run(snap([deferred(1, gpus=4, node_count=2)], nodes), PLACE))
    assert got[1].req_nodes == "gpu2,gpu4"
    three = changes(run(snap([deferred(1, gpus=4, node_count=3)], nodes), PLACE))
    assert three[1].req_nodes == "gpu1,gpu3,gpu5"


def test_a_gang_no_switch_has_room_for_takes_the_best_nodes_anywhere() -> None:
    nodes = [
        gpu_node("gpu1", switch="leaf1"),
        gpu_node("gpu2", switch="leaf2"),
        replace(gpu_node("gpu3", switch="leaf1"), card_used=(32,) * 4),
        replace(gpu_node("gpu4", switch="leaf2"), card_used=(32,) * 4),
    ]
    got = changes(run(snap([deferred(1, gpus=4, node_count=2)], nodes), PLACE))
    assert got[1].req_nodes == "gpu1,gpu2"


#: Work that ended: whole cards, so breaking a free card costs what a whole-card job loses.
WHOLE_CARDS = [UsageRecord("nlp", "bob", NOW - 99, NOW - 9, Amounts(1, 0, 4, 16))] * 3


def test_our_pin_is_kept_while_it_fits_then_moved_then_handed_back() -> None:
    nodes = [gpu_node("gpu1"), replace(gpu_node("gpu2"), card_used=(24, 32, 32, 32))]
    s = snap([deferred(1, shards=8)], nodes, usage=WHOLE_CARDS)
    p = run(s, PLACE)
    assert changes(p)[1].req_nodes == "gpu2"
    waiting = apply_state(s, p)
    waiting = replace(
        waiting,
        jobs=tuple(replace(j, reason="Resources", deferred=False) for j in waiting.jobs),
    )
    assert 1 not in changes(run(waiting, PLACE))  # still fits there: nothing to write
    full = replace(waiting, nodes=(nodes[0], replace(nodes[1], card_used=(32,) * 4)))
    assert changes(run(full, PLACE))[1].req_nodes == "gpu1"
    gone = replace(full, nodes=(replace(nodes[0], card_used=(32,) * 4), full.nodes[1]))
    assert changes(run(gone, PLACE))[1].req_nodes == ""  # back to Slurm: anywhere


def test_only_max_pins_deferred_jobs_per_cycle() -> None:
    jobs = [deferred(i, shards=4) for i in range(1, 6)]
    got = changes(run(snap(jobs, [gpu_node("gpu1")]), pol("placement", max_pins=2)))
    assert {i for i, c in got.items() if c.req_nodes} == {1, 2}
    assert {i for i, c in got.items() if c.start_now} == {1, 2, 3, 4, 5}


def test_the_task_model_counts_queue_nodes_and_history() -> None:
    jobs = [
        running(1, "gpu1", gpus=1, cpus=4),
        job(2, shards=8, cpus=2),
        job(3, cpus=4),
        job(4, partition="cpu", cpus=8),
    ]
    usage = [UsageRecord("nlp", "alice", NOW - 100, NOW - 10, Amounts(0.25, 0, 2, 4))]
    counts = task_counts(jobs, usage, {"gpu": "gpu", "cpu": "cpu"})
    gpu = counts["gpu"].counts
    assert sum(gpu.values()) == 4  # 1 whole card, 1 share, 1 CPU job on GPU nodes, 1 ended
    assert Counter(s.gpu_count for s in gpu.elements()) == {1: 3, 0: 1}
    assert sum(counts["cpu"].counts.values()) == 1
    assert counts["gpu"].model().cpu_per_gpu_milli > 0


def test_the_collector_knows_a_deferred_job() -> None:
    def raw(**kw: object) -> Job:
        base: dict[str, object] = {
            "job_id": 7,
            "name": "t",
            "user": "carol",
            "account": "cs101",
            "partition": "gpu",
            "qos": "normal",
            "state": JobState.PENDING,
            "reason": "BeginTime",
            "admin_comment": "aipool:tenant=cs101,policy=abc,placement=deferred",
            "eligible_time": datetime.fromtimestamp(NOW + 10, UTC),
        }
        base.update(kw)
        return Job(**base)  # type: ignore[arg-type]

    assert job_info(raw(), now=NOW).deferred
    assert not job_info(raw(eligible_time=datetime.fromtimestamp(NOW - 1, UTC)), now=NOW).deferred
    assert not job_info(raw(restart_count=1), now=NOW).deferred  # requeued: Slurm's wait
    assert not job_info(raw(admin_comment="aipool:tenant=cs101"), now=NOW).deferred
    users_own = raw(comment="aipool:placement=deferred", admin_comment="")
    assert not job_info(users_own, now=NOW).deferred  # only the hook's tag counts


@pytest.mark.parametrize("scorer", ["random-fit"])
def test_a_scorer_with_random_ties_is_refused(scorer: str) -> None:
    from plumbing.errors import ConfigError
    from slurm_plugins.policy.config import parse_config

    with pytest.raises(ConfigError, match="at random"):
        parse_config({"policies": [{"name": "placement", "args": {"scorer": scorer}}]})


def test_deferred_jobs_are_reserved_beyond_the_lookahead() -> None:
    jobs = [deferred(i, shards=16) for i in range(1, 4)]
    s = snap(jobs, [gpu_node("gpu1", gpus=1), gpu_node("gpu2", gpus=1)])
    p = run(s, PLACE, lookahead=0)
    got = changes(p)
    assert [got[i].req_nodes for i in (1, 2)] == ["gpu1", "gpu1"]
    assert got[3].req_nodes == "gpu2"
    assert build_policies(config(PLACE))  # builds without a state
    assert DaemonState().base_req == {}


def test_the_task_model_is_kept_until_the_mix_moves(tmp_path: object) -> None:
    from pathlib import Path

    from slurm_plugins.policy.state import StateStore

    def whole(i: int) -> object:  # the same CPU and memory per GPU milli as the shares
        return job(i, gpus=1, cpus=8, mem=8000)

    nodes = [gpu_node(f"gpu{i}") for i in range(1, 5)]
    base = [job(100 + i, shards=4) for i in range(90)] + [whole(300 + i) for i in range(10)]
    s = snap([*base, deferred(1, shards=4)], nodes)
    first = run(s, PLACE).state.task_models["gpu"]
    assert len(first.shapes) == 2
    nudged = replace(s, state=run(s, PLACE).state, jobs=(*s.jobs, whole(2)))
    kept = run(nudged, PLACE).state.task_models["gpu"]
    assert kept is first  # one more whole card: the mix moved 1 %, within the tolerance
    moved = replace(nudged, jobs=(*nudged.jobs, *(whole(10 + i) for i in range(10))))
    second = run(moved, PLACE).state.task_models["gpu"]
    assert second is not first
    assert dict(second.shapes) != dict(first.shapes)
    store = StateStore(Path(str(tmp_path)))
    store.save(run(moved, PLACE).state)
    assert store.load().task_models["gpu"].shapes == second.shapes


# ------------------------------------------------------------------ Slurm 22.05's shard marks
def test_slurm_forgets_a_shared_card_and_whole_card_work_is_kept_off_it() -> None:
    from slurm_plugins.policy.cluster import FreeNode

    # card 0 still holds 16 shards, but a shard job on it ended: slurmctld marks only card 1
    ghost = replace(gpu_node("gpu1"), card_used=(16, 32, 0, 0), slurm_busy=(1,))
    fn = FreeNode(ghost)
    assert fn.shared_hazard
    assert fn.whole_picks(1) == [0]  # what slurmctld would give a whole-card job
    assert not fn.whole_ok(1)
    assert fn.unsafe_for(Demand(1, 1000, gpus=1))
    assert fn.fits(Demand(1, 1000, shards=16))  # shares still see the shards in use
    honest = FreeNode(replace(ghost, slurm_busy=(0, 1)))
    assert honest.whole_ok(2)
    assert honest.whole_picks(2) == [2, 3]


def test_a_whole_card_job_goes_where_slurm_picks_a_really_free_card() -> None:
    ghost = replace(gpu_node("gpu1"), card_used=(16, 0, 0, 0), slurm_busy=())
    other = replace(gpu_node("gpu2"), card_used=(32, 32, 0, 0), slurm_busy=(0, 1))
    s = snap([deferred(1, gpus=1), deferred(2, shards=8)], [ghost, other])
    got = changes(run(s, PLACE))
    assert got[1].req_nodes == "gpu2"  # gpu1 would have given it the shared card 0
    assert got[2].start_now


def test_whole_card_work_that_fits_nowhere_safely_is_kept_off_shared_cards() -> None:
    ghost = replace(gpu_node("gpu1"), card_used=(16, 32, 32, 32), slurm_busy=(1, 2, 3))
    s = snap([deferred(1, gpus=1), job(2, gpus=1, reason="Resources")], [ghost])
    got = changes(run(s, PLACE))
    assert got[1].req_nodes is None
    assert got[1].exc_nodes == "gpu1"
    assert got[1].start_now
    assert got[2].exc_nodes == "gpu1"  # queued work too, until the node is right again
    mended = replace(s, nodes=(replace(ghost, slurm_busy=(0, 1, 2, 3)),))
    mended = apply_state(mended, run(s, PLACE))
    assert changes(run(mended, PLACE))[2].exc_nodes == ""  # handed back


@pytest.mark.parametrize(
    ("used", "busy"),
    [
        # 22.05: cards by index (card 1 holds shards, card 3 a whole-card job)
        ((("gpu", 1, "3"), ("shard", 1, "1")), (1, 3)),
        # 23.02+: shards as used/total per card (24.11 keeps them after one of a card's jobs
        # ends): card 0 holds shards, card 2 a whole-card job (by index)
        ((("gpu", 1, "2"), ("shard", 8, "8/32,0/32,0/32,0/32")), (0, 2)),
    ],
)
def test_the_collector_reads_slurms_marks(
    used: tuple[tuple[str, int, str], ...], busy: tuple[int, ...]
) -> None:
    from slurm_plugins.client.models import Gres, Node, NodeState
    from slurm_plugins.policy.collect import node_info

    node = Node(
        name="gpu1",
        state=NodeState.MIXED,
        cpus=16,
        real_memory=64000,
        gres=(Gres("gpu", "a100", 4), Gres("shard", "a100", 128)),
        gres_used=tuple(Gres(name, "a100", count, idx) for name, count, idx in used),
    )
    assert node_info(node, []).slurm_busy == busy


def test_shards_above_one_card_fit_and_are_taken_across_cards() -> None:
    """Where Slurm takes one job's shards from several cards (23.11+), a 1.25-card request
    fits a node whose cards have that much free together, and is taken as slurmctld takes
    it: a single card when one has room, else each card's free shards in order."""
    from slurm_plugins.policy.cluster import FreeNode
    from slurm_plugins.policy.resources import Demand

    fn = FreeNode(replace(gpu_node("g1"), card_used=(20, 32, 0, 0)))
    assert fn.shards_fit(12)
    assert fn.shard_picks(12) == [(0, 12)]
    assert fn.shard_picks(16) == [(2, 16)]  # the lowest card with room for all of them
    assert fn.shards_fit(40)
    assert fn.shard_picks(40) == [(0, 12), (2, 28)]
    assert not fn.shards_fit(77)  # 12 + 32 + 32 free
    assert fn.take(Demand(1, 1000, 0, None, 40)) == [(0, 12), (2, 28)]
    assert fn.card_free == [0, 0, 4, 32]


def test_a_share_waits_held_where_slurm_would_split_it_over_cards() -> None:
    """On a Slurm that takes one job's shards from several cards, a quarter card that no
    card has room for is held (Slurm would split it), not started unpinned; a job over one
    card is not held, and on 22.05 nothing changes."""
    frag = [replace(gpu_node("gpu1"), card_used=(28, 28, 28, 28))]  # 4 free on each card
    quarter, bigger = deferred(1, shards=8), deferred(2, shards=40)
    newer = run(snap([quarter, bigger], frag, shards_across_cards=True), PLACE)
    assert [(h.job_id, "split" in h.reason) for h in newer.holds] == [(1, True)]
    assert 1 not in changes(newer)
    older = run(snap([quarter], frag), PLACE)
    assert older.holds == ()
    assert changes(older)[1].start_now
    # room on one card again: pinned there and started
    roomy = [replace(gpu_node("gpu1"), card_used=(28, 0, 28, 28))]
    again = changes(run(snap([quarter], roomy, shards_across_cards=True), PLACE))
    assert again[1].req_nodes == "gpu1"
    assert again[1].start_now
