"""capacity: borrowed work runs in the preemptible QOS and returns to its own within quota."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from slurm_plugins.client import SlurmClient
from slurm_plugins.client.runner import Completed, ReplayRunner
from slurm_plugins.policy.apply import apply
from slurm_plugins.policy.plan import JobChange, Plan
from slurm_plugins.policy.snapshot import DaemonState, JobInfo
from slurm_plugins.policy.state import StateStore
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
from tests.unit.policy.test_policy_capacity import tenants

NODES = [gpu_node("gpu1"), gpu_node("gpu2")]
VISION_FULL = running(1, "gpu1", account="vision", gpus=4, user="bob")


def qos_changes(p: Plan) -> dict[int, str]:
    return {c.job_id: c.qos for c in p.job_changes if c.qos is not None}


@pytest.mark.parametrize(
    ("jobs", "base_qos", "args", "want_changes", "want_base"),
    [
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2)],
            {},
            {},
            {2: "low"},
            {2: "normal"},
            id="borrowing-moves-to-low",
        ),
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2, qos="high")],
            {},
            {},
            {2: "low"},
            {2: "high"},
            id="a-high-job-borrows-in-low-too",
        ),
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2, qos="low")],
            {},
            {},
            {},
            {},
            id="already-low-nothing-to-remember",
        ),
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2)],
            {},
            {"borrow_qos": "scavenger"},
            {2: "scavenger"},
            {2: "normal"},
            id="configured-borrowing-qos",
        ),
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2)],
            {},
            {"borrow_qos": None},
            {},
            {},
            id="borrowing-qos-off",
        ),
        pytest.param(
            [job(2, account="vision", gpus=2, qos="low")],
            {2: "normal"},
            {},
            {2: "normal"},
            {2: "normal"},
            id="back-within-quota-back-to-its-qos",
        ),
        pytest.param(
            [VISION_FULL, job(2, account="vision", gpus=2, qos="low")],
            {2: "high"},
            {},
            {},
            {2: "high"},
            id="still-borrowing-stays-low",
        ),
        pytest.param(
            [
                VISION_FULL,
                running(3, "gpu2", account="vision", gpus=4, user="bob"),
                job(2, account="vision", gpus=2, qos="low"),
            ],
            {2: "normal"},
            {},
            {2: "normal"},
            {2: "normal"},
            id="held-over-limits-waits-in-its-own-qos",
        ),
        pytest.param(
            [VISION_FULL, running(2, "gpu2", account="vision", gpus=2, qos="low")],
            {2: "normal"},
            {},
            {},
            {2: "normal"},
            id="running-borrower-keeps-its-record",
        ),
        pytest.param(
            [job(2, account="nlp", gpus=2)],
            {2: "normal", 9: "high"},
            {},
            {},
            {},
            id="records-of-restored-and-gone-jobs-dropped",
        ),
    ],
)
def test_borrowing_qos(
    jobs: list[JobInfo],
    base_qos: dict[int, str],
    args: dict,
    want_changes: dict[int, str],
    want_base: dict[int, str],
) -> None:
    s = snap(jobs, NODES, tenants=tenants(), state=DaemonState(base_qos=base_qos))
    p = run(s, pol("capacity", **args))
    assert qos_changes(p) == want_changes
    assert dict(p.state.base_qos) == want_base


def test_borrowing_reason_names_the_qos() -> None:
    s = snap([VISION_FULL, job(2, account="vision", gpus=2)], NODES, tenants=tenants())
    p = run(s, "capacity")
    assert "capacity: tenant vision over guarantee by 2 gpu, borrowing in QOS low" in p.reasons[2]


def test_round_trip_borrow_reclaim_return() -> None:
    """Moved to low while borrowing; once within quota again, back to its own QOS, and the
    record is forgotten the cycle after."""
    s = snap([VISION_FULL, job(2, account="vision", gpus=2)], NODES, tenants=tenants())
    p1 = run(s, "capacity")
    assert qos_changes(p1) == {2: "low"}
    s2 = apply_state(s, p1)
    assert run(s2, "capacity").job_changes == ()  # converged: nothing more to write
    # the tenant's own job ends: job 2 is within quota again
    s3 = replace(s2, jobs=tuple(j for j in s2.jobs if j.job_id != 1), nodes=tuple(NODES))
    p3 = run(s3, "capacity")
    assert qos_changes(p3) == {2: "normal"}
    s4 = apply_state(s3, p3)
    p4 = run(s4, "capacity")
    assert p4.job_changes == ()
    assert dict(p4.state.base_qos) == {}


def test_failed_move_is_retried_and_then_forgotten() -> None:
    s = snap([VISION_FULL, job(2, account="vision", gpus=2)], NODES, tenants=tenants())
    p1 = run(s, "capacity")
    failed = replace(s, state=p1.state)  # the update never happened: job 2 still normal
    assert qos_changes(run(failed, "capacity")) == {2: "low"}
    gone = replace(failed, jobs=(job(2, account="vision", gpus=2),), nodes=tuple(NODES))
    p3 = run(gone, "capacity")  # no longer borrowing: nothing to move, nothing kept
    assert qos_changes(p3) == {}
    assert dict(p3.state.base_qos) == {}


def test_priority_ranks_a_moved_job_by_its_own_class() -> None:
    s = snap(
        [job(2, qos="low", submit=NOW - 10), job(3, qos="normal", submit=NOW - 20)],
        NODES,
        state=DaemonState(base_qos={2: "high"}),
    )
    p = run(s, "priority")
    assert p.order == (2, 3)


def test_reclaim_ranks_borrowers_by_their_own_class() -> None:
    """Two borrowed jobs both run in low; the one whose own class is lower goes first."""
    jobs = [
        VISION_FULL,
        running(2, "gpu2", account="vision", gpus=2, qos="low", start=3000),
        running(3, "gpu2", account="vision", gpus=2, qos="low", start=2000),
        job(4, account="nlp", gpus=2),
    ]
    s = snap(jobs, NODES, tenants=tenants(), state=DaemonState(base_qos={2: "high", 3: "normal"}))
    assert [a.job_id for a in run(s, "capacity").actions] == [3]


def test_admit_label_job_submitted_held_gets_its_qos_before_release() -> None:
    held = job(2, account="vision", gpus=2, held=True, reason="JobHeldUser", labels={"admit": "1"})
    s = snap([VISION_FULL, held], NODES, tenants=tenants())
    p = run(s, "capacity")
    assert qos_changes(p) == {2: "low"}
    assert released_ids(p) == {2}
    assert held_ids(p) == set()


def test_a_user_held_job_without_the_label_is_left_alone() -> None:
    held = job(2, account="vision", gpus=2, held=True, reason="JobHeldUser")
    p = run(snap([VISION_FULL, held], NODES, tenants=tenants()), "capacity")
    assert p.job_changes == ()
    assert released_ids(p) == set()


def test_apply_writes_the_qos_before_the_release(tmp_path: Path) -> None:
    runner = ReplayRunner({("scontrol",): Completed((), 0, "", "")})
    client = SlurmClient(runner)  # type: ignore[arg-type]
    p = Plan(
        now=1.0,
        job_changes=(JobChange(2, qos="low"), JobChange(3, site_factor=7, qos="normal")),
        releases=(),
    )
    apply(p, client, old_state=DaemonState(), store=StateStore(tmp_path))
    assert runner.calls[0][0] == ("scontrol",)
    assert runner.calls[0][1] == "update JobId=2 QOS=low\nupdate JobId=3 QOS=normal SiteFactor=7\n"


@pytest.mark.parametrize("bad", ["", "low qos", "low;x", "$(id)"])
def test_borrowing_qos_must_be_a_name(bad: str) -> None:
    from marshmallow import ValidationError

    from slurm_plugins.policy.policies.capacity import CapacityArgs

    with pytest.raises(ValidationError, match="not a QOS name"):
        CapacityArgs().load({"borrow_qos": bad})
