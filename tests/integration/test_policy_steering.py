"""The policy daemon steering the real lab: anti-affinity, migration off a drained node
(timed), idle release. Nodes are restored in ``finally``; only the test's own jobs move."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from plumbing.notify import read_notifications
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.node import write_samples
from slurm_plugins.node.sources import FileSource
from slurm_plugins.policy.plan import Action
from tests.integration.conftest import wait_until
from tests.integration.test_policy_support import Harness, harness

pytestmark = pytest.mark.slurm

RUNNING = JobState.RUNNING
SHARD = ("-p", "gpu", "--gres=shard:4")


@pytest.fixture
def h(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[Harness]:
    yield from harness(lab, client, tmp_path)


def node_of(h: Harness, job_id: int) -> str:
    j = h.job(job_id)
    assert j is not None
    return j.nodes


def resume(h: Harness, name: str) -> None:
    """Undo our drain (unless someone already did) and wait until the node takes work."""
    node = next(n for n in h.client.nodes() if n.name == name)
    if node.has_state("DRAIN"):
        h.client.update_node(name, state="RESUME")
    wait_until(lambda: next(n for n in h.client.nodes() if n.name == name).available, 60)


def test_anti_affinity_group_lands_on_different_nodes(h: Harness) -> None:
    d = h.daemon([{"name": "affinity"}, {"name": "fifo"}])
    label = f"anti_affinity={h.prefix}web"
    a = h.submit("web-a", *SHARD, hold=True, labels=label)
    b = h.submit("web-b", *SHARD, hold=True, labels=label)
    h.drive(d, lambda: h.state(a) is RUNNING and h.state(b) is RUNNING, 60)
    assert node_of(h, a) != node_of(h, b)
    ja, jb = h.job(a), h.job(b)
    assert ja is not None
    assert jb is not None
    assert node_of(h, a) in jb.excluded_nodes or node_of(h, b) in ja.excluded_nodes


def test_job_on_drained_node_is_migrated_and_runs_elsewhere(h: Harness) -> None:
    d = h.daemon([{"name": "reschedule", "args": {"requeue_delay": "3s"}}, {"name": "fifo"}])
    job = h.submit("migrant", *SHARD)
    h.drive(d, lambda: h.state(job) is RUNNING, 60)
    first = node_of(h, job)
    try:
        t0 = time.monotonic()
        h.client.update_node(first, state="DRAIN", reason="policy test maintenance")
        h.drive(d, lambda: h.state(job) is RUNNING and node_of(h, job) != first, 120)
        took = time.monotonic() - t0
    finally:
        resume(h, first)
    acts = [(a.job_id, a.action) for r in h.reports for a in r.plan.actions]
    assert (job, Action.SIGNAL) in acts
    assert (job, Action.REQUEUE) in acts
    print(
        f"\nmigration: drain of {first} -> job {job} running on {node_of(h, job)} in {took:.1f} s"
    )
    assert took <= 60, f"migration took {took:.1f} s (target 60 s)"
    last = d.cycle()  # the daemon itself notices the move and logs how long it took
    assert last is not None
    moved = [m for r in [*h.reports, last] for m in r.migrations.items()]
    assert moved
    assert moved[-1][0] == job


def test_idle_job_is_warned_then_stopped(h: Harness) -> None:
    args = {"threshold": 5, "period": "12s", "grace": "8s", "action": "cancel", "min_samples": 3}
    d = h.daemon([{"name": "idle", "args": args}])
    job = h.submit("idle", *SHARD, user="carol")
    h.drive(d, lambda: h.state(job) is RUNNING, 60)
    utils = h.tmp / "util"
    utils.mkdir()
    (utils / str(job)).write_text("1.5\n")  # the lab's file-fed source: 1.5 % busy
    agent = FileSource(utils)
    samples = h.tmp / "samples"

    def sample_then(check: object) -> bool:
        write_samples(samples, node_of(h, job) or "gpu", agent.sample(), time.time())
        return bool(check)

    h.drive(d, lambda: sample_then(True) and h.state(job) in (None, JobState.CANCELLED), 90)
    kinds = [a.action for r in h.reports for a in r.plan.actions if a.job_id == job]
    assert kinds[0] is Action.WARN
    assert kinds[-1] is Action.CANCEL
    notes = read_notifications(h.tmp / "notes.jsonl")
    subjects = [n["subject"] for n in notes if n["job_id"] == job]
    assert any("warning" in str(s) for s in subjects)
    assert any("cancelled" in str(s) for s in subjects)
    assert all(n["users"][0] == "carol" for n in notes if n["job_id"] == job)
