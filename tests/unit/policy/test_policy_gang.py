"""gang: held until all members can start, released together, partial starts undone."""

from __future__ import annotations

import pytest

from slurm_plugins.policy.plan import Action
from slurm_plugins.policy.snapshot import DaemonState, Mark
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


def member(job_id: int, *, size: int = 3, name: str = "exp1", **kw: object) -> object:
    kw.setdefault("gpus", 2)
    return job(job_id, labels={"gang": name, "gang_size": str(size)}, **kw)  # type: ignore[arg-type]


NODES = [gpu_node("gpu1"), gpu_node("gpu2")]


@pytest.mark.parametrize(
    ("jobs", "held", "released", "why"),
    [
        pytest.param(
            [member(1), member(2)],
            {1, 2},
            set(),
            "gang exp1: 2 of 3 members queued",
            id="incomplete",
        ),
        pytest.param(
            [member(1, held=True), member(2, held=True), member(3, held=True)],
            set(),
            {1, 2, 3},
            "gang exp1: all 3 members fit, released together",
            id="complete-and-fits",
        ),
        pytest.param(
            [member(1, gpus=3), member(2), member(3, gpus=4)],
            {1, 2, 3},
            set(),
            "gang exp1: the 3 members cannot all start now",
            id="does-not-fit",
        ),
        pytest.param(
            [member(1, held=True), member(2, held=True), member(3, held=True, reason="Dependency")],
            set(),
            set(),
            "is not eligible",
            id="member-not-eligible",
        ),
    ],
)
def test_gang_table(jobs: list, held: set[int], released: set[int], why: str) -> None:
    p = run(snap(jobs, NODES), "gang")
    assert held_ids(p) == held
    assert released_ids(p) == released
    assert any(why in r for r in p.reasons[1])


def test_room_taken_by_earlier_jobs_in_the_queue() -> None:
    jobs = [
        job(5, gpus=4, submit=NOW - 5000),
        member(1, held=True),
        member(2, held=True),
        member(3, held=True),
    ]
    p = run(snap(jobs, NODES), "fifo", "gang")
    assert released_ids(p) == set()  # job 5 will take a whole node first


def test_two_groups_do_not_share_reserved_room() -> None:
    a = [member(i, name="a", size=2, gpus=4, held=True, submit=NOW - 100 + i) for i in (1, 2)]
    b = [member(i, name="b", size=2, gpus=4, held=True, submit=NOW - 50 + i) for i in (3, 4)]
    p = run(snap(a + b, NODES), "fifo", "gang")
    assert released_ids(p) == {1, 2}
    assert "gang b: the 2 members cannot all start now" in p.reasons[3][0]


def test_gangs_are_per_user() -> None:
    jobs = [member(1, user="alice", size=2), member(2, user="bob", size=2)]
    p = run(snap(jobs, NODES), "gang")
    assert held_ids(p) == {1, 2}


def test_partial_start_is_tolerated_briefly_then_undone() -> None:
    jobs = [
        running(1, "gpu1", gpus=2, labels={"gang": "exp1", "gang_size": "3"}),
        member(2),
        member(3),
    ]
    state = DaemonState(released={i: Mark(NOW - 30) for i in (1, 2, 3)})
    p = run(snap(jobs, NODES, state=state), pol("gang", start_timeout=120))
    assert p.actions == ()
    assert held_ids(p) == set()
    assert p.wake_at == NOW + 90
    late = run(snap(jobs, NODES, state=state, now=NOW + 200), pol("gang", start_timeout=120))
    assert [(a.job_id, a.action) for a in late.actions] == [(1, Action.REQUEUE_HOLD)]
    assert held_ids(late) == {2, 3}
    assert late.state.holds.keys() == {1, 2, 3}


def test_release_is_remembered_and_holds_are_ours() -> None:
    s = snap([member(1), member(2)], NODES)
    p = run(s, "gang")
    assert set(p.state.holds) == {1, 2}
    s2 = apply_state(s, p)
    s3 = snap([*s2.jobs, member(3, held=True, reason="JobHeldUser")], NODES, state=s2.state)
    p3 = run(s3, "gang")
    assert released_ids(p3) == {1, 2, 3}
    assert set(p3.state.released) == {1, 2, 3}
    assert p3.state.holds == {}


def test_non_members_untouched() -> None:
    p = run(snap([job(1, gpus=1)], NODES), "gang")
    assert p.holds == ()
    assert p.releases == ()
    assert p.reasons == {}
