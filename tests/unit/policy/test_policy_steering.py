"""anti-affinity, reschedule (migration, defragmentation), idle release, placement."""

from __future__ import annotations

from dataclasses import replace

import pytest

from slurm_plugins.node import Sample
from slurm_plugins.policy.plan import Action
from slurm_plugins.policy.snapshot import DaemonState, Mark, Tenant
from tests.unit.policy.builders import (
    NOW,
    apply_state,
    gpu_node,
    held_ids,
    job,
    pol,
    released_ids,
    run,
    running,
    snap,
)

AA = {"anti_affinity": "web"}


# ------------------------------------------------------------------ anti-affinity
@pytest.mark.parametrize(
    ("jobs", "expected_exc"),
    [
        pytest.param(
            [running(1, "gpu1", shards=4, labels=AA), job(2, shards=4, labels=AA)],
            {2: "gpu1"},
            id="off-running-member",
        ),
        pytest.param(
            [job(1, shards=4, labels=AA), job(2, shards=4, labels=AA)],
            {},
            id="two-pending-one-at-a-time",
        ),
        pytest.param(
            [
                running(1, "gpu1", shards=4, labels=AA),
                job(2, shards=4, labels=AA, excluded_nodes=("gpu3",)),
            ],
            {2: "gpu1,gpu3"},
            id="user-exclusion-kept",
        ),
        pytest.param(
            [
                running(1, "gpu1", shards=4, labels=AA, account="vision"),
                job(2, shards=4, labels=AA),
            ],
            {},
            id="other-account-other-group",
        ),
        pytest.param([running(1, "gpu1", shards=4), job(2, shards=4)], {}, id="no-label"),
    ],
)
def test_anti_affinity(jobs: list, expected_exc: dict[int, str]) -> None:
    p = run(snap(jobs, [gpu_node("gpu1"), gpu_node("gpu2")]), "affinity")
    got = {c.job_id: c.exc_nodes for c in p.job_changes if c.exc_nodes is not None}
    assert got == expected_exc


def test_anti_affinity_members_start_one_at_a_time_with_exclusions() -> None:
    held = {"held": True, "reason": "JobHeldUser"}
    jobs = [job(1, shards=4, labels=AA, **held), job(2, shards=4, labels=AA, **held)]  # type: ignore[arg-type]
    nodes = [gpu_node("gpu1"), gpu_node("gpu2")]
    p = run(snap(jobs, nodes), "affinity")
    assert released_ids(p) == {1}
    assert "anti-affinity web: waiting for member 1 to start first" in p.reasons[2][0]
    # member 1 runs on gpu1: member 2 is released, kept off gpu1
    s2 = snap([running(1, "gpu1", shards=4, labels=AA), jobs[1]], nodes, state=p.state)
    p2 = run(s2, "affinity")
    assert released_ids(p2) == {2}
    assert {c.job_id: c.exc_nodes for c in p2.job_changes} == {2: "gpu1"}


def test_anti_affinity_gang_members_are_spread_at_once() -> None:
    labels = {**AA, "gang": "g", "gang_size": "2"}
    jobs = [job(1, shards=4, labels=labels, held=True), job(2, shards=4, labels=labels, held=True)]
    p = run(snap(jobs, [gpu_node("gpu1"), gpu_node("gpu2")]), "affinity", "gang")
    assert released_ids(p) == {1, 2}
    assert {c.job_id: c.exc_nodes for c in p.job_changes} == {1: "gpu2", 2: "gpu1"}


def test_members_that_met_anyway_are_pulled_apart_while_young() -> None:
    nodes = [gpu_node("gpu1"), gpu_node("gpu2")]
    jobs = [
        running(1, "gpu1", shards=4, labels=AA, start=NOW - 100),
        running(2, "gpu1", shards=4, labels=AA, start=NOW - 50),
    ]
    p = run(snap(jobs, nodes), "affinity")
    assert [(a.job_id, a.action) for a in p.actions] == [(2, Action.REQUEUE)]
    assert "shares gpu1 with member 1" in p.actions[0].reason
    old = [replace(j, start=NOW - 3600) for j in jobs]
    assert run(snap(old, nodes), "affinity").actions == ()


def test_anti_affinity_exclusion_is_not_rewritten_every_cycle() -> None:
    s = snap(
        [running(1, "gpu1", shards=4, labels=AA), job(2, shards=4, labels=AA)],
        [gpu_node("gpu1"), gpu_node("gpu2")],
    )
    p = run(s, "affinity")
    again = run(apply_state(s, p), "affinity")
    assert again.job_changes == ()
    # the running member ends: the exclusion is taken back
    s3 = replace(apply_state(s, p), jobs=tuple(j for j in apply_state(s, p).jobs if j.job_id != 1))
    p3 = run(s3, "affinity")
    assert [(c.job_id, c.exc_nodes) for c in p3.job_changes] == [(2, "")]


# ------------------------------------------------------------------ reschedule
DRAINED = replace(gpu_node("gpu1"), flags=frozenset({"DRAIN"}), reason="maintenance")


def test_drained_node_signal_then_requeue() -> None:
    s = snap([running(1, "gpu1", gpus=2)], [DRAINED, gpu_node("gpu2")])
    p = run(s, pol("reschedule", requeue_delay=10))
    assert [(a.job_id, a.action, a.signal) for a in p.actions] == [(1, Action.SIGNAL, "USR1")]
    assert "node gpu1 drained (maintenance)" in p.actions[0].reason
    assert p.wake_at == NOW + 10
    soon = run(replace(s, state=p.state, now=NOW + 5), pol("reschedule", requeue_delay=10))
    assert soon.actions == ()
    due = run(replace(s, state=p.state, now=NOW + 10), pol("reschedule", requeue_delay=10))
    assert [(a.job_id, a.action) for a in due.actions] == [(1, Action.REQUEUE)]
    assert due.state.requeued[1].since == NOW + 10


@pytest.mark.parametrize(
    ("jobs", "nodes", "args", "expected"),
    [
        pytest.param(
            [running(1, "gpu1", gpus=2)],
            [DRAINED, gpu_node("gpu2")],
            {"checkpoint_signal": None},
            [(1, Action.REQUEUE)],
            id="no-checkpoint",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=4)],
            [DRAINED, replace(gpu_node("gpu2"), card_used=(32, 0, 0, 0))],
            {},
            [],
            id="no-home-stays",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=4)],
            [DRAINED, replace(gpu_node("gpu2"), card_used=(32, 0, 0, 0))],
            {"require_home": False},
            [(1, Action.SIGNAL)],
            id="no-home-forced",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=2, requeue=False)],
            [DRAINED, gpu_node("gpu2")],
            {},
            [],
            id="not-requeueable",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=3), running(2, "gpu1", gpus=1)],
            [DRAINED, gpu_node("gpu2")],
            {},
            [(1, Action.SIGNAL), (2, Action.SIGNAL)],
            id="both-fit-elsewhere",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=3), running(2, "gpu1", gpus=2)],
            [replace(DRAINED, gpus=8, card_used=(0,) * 8), gpu_node("gpu2")],
            {},
            [(1, Action.SIGNAL)],
            id="homes-are-not-shared",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=2)],
            [replace(gpu_node("gpu1"), flags=frozenset({"FAIL"})), gpu_node("gpu2")],
            {},
            [(1, Action.SIGNAL)],
            id="failing",
        ),
        pytest.param(
            [running(1, "gpu1", gpus=2)], [gpu_node("gpu1"), gpu_node("gpu2")], {}, [], id="healthy"
        ),
    ],
)
def test_migration_table(jobs: list, nodes: list, args: dict, expected: list) -> None:
    p = run(snap(jobs, nodes), pol("reschedule", **args))
    assert [(a.job_id, a.action) for a in p.actions] == expected


def test_defrag_moves_small_jobs_only_when_all_have_a_home() -> None:
    old = NOW - 3600
    nodes = [gpu_node("gpu1"), gpu_node("gpu2")]
    jobs = [
        running(1, "gpu1", shards=8, start=old),
        running(2, "gpu1", shards=4, start=old),
        running(3, "gpu2", gpus=3, start=old),
        running(4, "gpu2", shards=16, start=old),
    ]
    args = {"defrag": True, "min_runtime": 600}
    p = run(snap(jobs, nodes), pol("reschedule", **args))
    assert {(a.job_id, a.action, a.target) for a in p.actions} == {
        (1, Action.REQUEUE_HOLD, "gpu2"),
        (2, Action.REQUEUE_HOLD, "gpu2"),
    }
    # next cycle: the moved jobs are pending and held by us; they are pinned, then released
    nxt = snap(
        [
            replace(
                j, state="PENDING", nodes=(), cards=(), start=None, held=True, reason="JobHeldAdmin"
            )
            if j.job_id in (1, 2)
            else j
            for j in jobs
        ],
        nodes,
        state=p.state,
    )
    p2 = run(nxt, pol("reschedule", **args))
    assert released_ids(p2) == {1, 2}
    assert {c.job_id: c.req_nodes for c in p2.job_changes} == {1: "gpu2", 2: "gpu2"}


@pytest.mark.parametrize(
    ("jobs", "why"),
    [
        pytest.param(
            [
                running(1, "gpu1", shards=8, start=NOW - 60),
                running(4, "gpu2", shards=16, start=NOW - 60),
            ],
            "too-young",
        ),
        pytest.param(
            [
                running(1, "gpu1", shards=30, start=NOW - 3600),
                running(4, "gpu2", shards=16, start=NOW - 3600),
            ],
            "no-home",
        ),
        pytest.param(
            [
                running(1, "gpu1", gpus=1, start=NOW - 3600),
                running(4, "gpu2", shards=16, start=NOW - 3600),
            ],
            "whole-card-job",
        ),
    ],
)
def test_defrag_leaves_alone(jobs: list, why: str) -> None:
    nodes = [gpu_node("gpu1"), replace(gpu_node("gpu2"), gpus=1, card_used=(0,))]
    p = run(snap(jobs, nodes), pol("reschedule", defrag=True, min_runtime=600))
    assert p.actions == (), why


# ------------------------------------------------------------------ idle
def samples(
    util: float, *, since: float, step: float = 60, until: float = NOW
) -> tuple[Sample, ...]:
    out, t = [], since
    while t <= until:
        out.append(Sample(t, util))
        t += step
    return tuple(out)


IDLE = {"threshold": 10, "period": 1800, "grace": 600}


@pytest.mark.parametrize(
    ("util", "start", "state", "expected"),
    [
        pytest.param(2.0, NOW - 7200, DaemonState(), Action.WARN, id="idle-warn"),
        pytest.param(50.0, NOW - 7200, DaemonState(), None, id="busy"),
        pytest.param(2.0, NOW - 600, DaemonState(), None, id="too-young"),
        pytest.param(
            2.0, NOW - 7200, DaemonState(warned={1: Mark(NOW - 300)}), None, id="in-grace"
        ),
        pytest.param(
            2.0,
            NOW - 7200,
            DaemonState(warned={1: Mark(NOW - 700)}),
            Action.CANCEL,
            id="after-grace",
        ),
    ],
)
def test_idle_table(util: float, start: float, state: DaemonState, expected: Action | None) -> None:
    j = running(1, "gpu1", gpus=1, start=start, user="bob", account="vision")
    s = snap([j], [gpu_node("gpu1")], state=state, samples={1: samples(util, since=start)})
    p = run(s, pol("idle", **IDLE))
    assert [a.action for a in p.actions] == ([expected] if expected else [])
    if expected is Action.WARN:
        assert p.notifications[0].users == ("bob", "root")
        assert "will be cancelled in 10 min unless it is used" in p.notifications[0].text
        assert p.state.warned[1].since == NOW


def test_idle_warning_withdrawn_by_use_and_tenant_threshold() -> None:
    j = running(1, "gpu1", gpus=1, start=NOW - 7200)
    busy_after_warning = (*samples(2.0, since=NOW - 7200), Sample(NOW - 100, 90.0))
    state = DaemonState(warned={1: Mark(NOW - 700)})
    s = snap([j], [gpu_node("gpu1")], state=state, samples={1: busy_after_warning})
    # a busy sample in the last period: not idle at all
    assert run(s, pol("idle", **IDLE)).actions == ()
    # the tenant's own, higher threshold makes 12 % idle
    t = Tenant("nlp", idle_threshold=20, idle_period_s=1800)
    s2 = snap([j], [gpu_node("gpu1")], tenants=[t], samples={1: samples(12.0, since=NOW - 7200)})
    assert [a.action for a in run(s2, pol("idle", **IDLE)).actions] == [Action.WARN]
    assert run(replace(s2, tenants=()), pol("idle", **IDLE)).actions == ()


def test_idle_ignores_cpu_jobs_and_missing_samples() -> None:
    cpu_job = running(1, "cpu1", partition="cpu", start=NOW - 7200)
    gpu_job = running(2, "gpu1", gpus=1, start=NOW - 7200)
    from tests.unit.policy.builders import cpu_node

    s = snap(
        [cpu_job, gpu_job],
        [cpu_node("cpu1"), gpu_node("gpu1")],
        samples={1: samples(0, since=NOW - 7200)},
    )
    assert run(s, pol("idle", **IDLE)).actions == ()


# ------------------------------------------------------------------ placement
def test_placement_pins_fractions_tightly_and_weights_nodes() -> None:
    nodes = [gpu_node("gpu1"), replace(gpu_node("gpu2"), card_used=(24, 32, 32, 32))]
    jobs = [running(9, "gpu2", shards=0, gpus=0, cards=()), job(1, shards=8)]
    p = run(snap(jobs, nodes), pol("placement", scorer="best-fit", lookahead=50))
    pins = {c.job_id: c.req_nodes for c in p.job_changes if c.req_nodes}
    assert pins == {1: "gpu2"}  # fills the partly used card instead of breaking a fresh one
    weights = {w.node: w.weight for w in p.node_weights}
    assert weights["gpu2"] < weights.get("gpu1", 10)  # fuller node first


def test_placement_respects_user_node_lists_and_exclusions() -> None:
    nodes = [gpu_node("gpu1"), replace(gpu_node("gpu2"), card_used=(24, 32, 32, 32))]
    own = job(1, shards=8, required_nodes=("gpu1",))
    p = run(snap([own], nodes), pol("placement", scorer="best-fit"))
    assert not [c for c in p.job_changes if c.req_nodes]
    aa = [running(5, "gpu2", shards=4, labels=AA), job(2, shards=8, labels=AA)]
    p2 = run(snap(aa, nodes), "affinity", pol("placement", scorer="best-fit", lookahead=50))
    change = next(c for c in p2.job_changes if c.job_id == 2)
    assert change.req_nodes == "gpu1"
    assert change.exc_nodes == "gpu2"


def test_placement_repins_when_the_node_filled_up() -> None:
    nodes = [gpu_node("gpu1"), replace(gpu_node("gpu2"), card_used=(24, 32, 32, 32))]
    s = snap([job(1, shards=8)], nodes)
    p = run(s, pol("placement", scorer="best-fit", node_weights=False, lookahead=50))
    s2 = apply_state(s, p)
    full = replace(s2, nodes=(nodes[0], replace(nodes[1], card_used=(32, 32, 32, 32))))
    p2 = run(full, pol("placement", scorer="best-fit", node_weights=False, lookahead=50))
    assert [(c.job_id, c.req_nodes) for c in p2.job_changes] == [(1, "gpu1")]


def test_placement_unknown_scorer_is_a_config_error() -> None:
    from plumbing.errors import ConfigError
    from slurm_plugins.policy.config import parse_config

    with pytest.raises(ConfigError, match="unknown scorer 'tetris'"):
        parse_config({"policies": [{"name": "placement", "args": {"scorer": "tetris"}}]})


def test_everything_together_is_still_deterministic() -> None:
    jobs = [job(i, shards=4 * (i % 3 + 1), labels=AA if i % 4 == 0 else {}) for i in range(1, 20)]
    s = snap(jobs, [gpu_node("gpu1"), gpu_node("gpu2")])
    names = [
        "fifo",
        "priority",
        "fair",
        "capacity",
        "gang",
        "affinity",
        "reschedule",
        "idle",
        "placement",
    ]
    assert run(s, *names) == run(s, *names)
    assert held_ids(run(s, *names)) <= {j.job_id for j in jobs if j.labels}
