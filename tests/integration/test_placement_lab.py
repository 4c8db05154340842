"""Placement on the real lab: the admission hook defers jobs while the placement daemon's
heartbeat is fresh, the daemon (as the service user) pins and starts them, and when it dies
Slurm places them itself. Node weights come back after a reconfigure.

Each test runs its own daemon (``aipool.lab.placement``): it steers every job of the lab,
so these tests need the lab services' daemon down, as the other lab tests do.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from aipool.lab import placement
from aipool.lab.cluster import Lab
from slurm_plugins.client import JobNotFound, SlurmClient
from slurm_plugins.client.labels import decode
from slurm_plugins.client.models import Job
from slurm_plugins.policy import collect
from slurm_plugins.policy.base import Context, Cycle
from slurm_plugins.policy.cluster import ClusterView, first_fit
from slurm_plugins.policy.policies.placement import Placement, fullness_weight
from slurm_plugins.policy.resources import Demand
from slurm_plugins.policy.snapshot import JobInfo
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm

SLEEP = "#!/bin/bash\nsleep 300\n"
GPU_NODES = ("gpu1", "gpu2")


@pytest.fixture
def quiet(lab: Lab, client: SlurmClient) -> Iterator[SlurmClient]:
    """No jobs on the GPU nodes to begin with, and none of ours left at the end."""

    def idle() -> bool:
        return not any(j.nodes and j.partition == "gpu" for j in client.jobs())

    wait_until(idle, 60)
    yield client
    placement.heartbeat(lab).unlink(missing_ok=True)


def submit(client: SlurmClient, lab: Lab, *opts: str, user: str = "carol") -> int:
    options = [f"--chdir={lab.cfg.jobs}", "--output=/dev/null", "--time=10", *opts]
    return client.submit(SLEEP, options, as_user=user)


def job(client: SlurmClient, job_id: int) -> Job | None:
    try:
        return client.job(job_id)
    except JobNotFound:
        return None


def running(client: SlurmClient, job_id: int) -> bool:
    j = job(client, job_id)
    return j is not None and j.is_running


def hook_sees(lab: Lab, fresh: bool) -> None:
    """Until the heartbeat is (or is no longer) fresh as the hook sees it (once a second)."""
    beat = placement.heartbeat(lab)

    def seen() -> bool:
        alive = beat.exists() and time.time() - beat.stat().st_mtime < 2
        return alive == fresh

    wait_until(seen, 30, interval=0.1)
    time.sleep(1.1)


def slurms_own_choice(lab: Lab, *opts: str) -> str:
    """The node slurmctld alone would start a job on now (``sbatch --test-only``)."""
    argv = ["sbatch", "--test-only", f"--chdir={lab.cfg.jobs}", "--time=10", *opts]
    done = subprocess.run(
        argv, input=SLEEP, capture_output=True, text=True, env=lab.cfg.env(), check=False
    )
    m = re.search(r"on nodes (\S+)", done.stderr + done.stdout)
    assert m, done.stderr
    return m.group(1)


def scorers_choice(client: SlurmClient, demand: Demand) -> str:
    """The node the daemon's placement would pin a new job of ``demand`` to, worked out
    here from a snapshot of the lab with the daemon's own code."""
    now = time.time()
    snap = collect.build(client.jobs(), client.nodes(), now=now)
    new = JobInfo(10**9, "carol", "cs101", "gpu", "normal", "PENDING", now, demand=demand)
    snap = replace(snap, jobs=(*snap.jobs, new))
    ctx = Context(snap)
    cycle = Cycle(ClusterView(snap.nodes, ctx.running), first_fit)
    verdict = Placement().admit(replace(new, deferred=True, reason="BeginTime"), ctx, cycle)
    assert verdict is not None
    assert len(verdict.pin) == 1
    return verdict.pin[0]


def test_a_whole_card_job_starts_where_the_scorer_prefers(lab: Lab, quiet: SlurmClient) -> None:
    client = quiet
    # gpu1 keeps its cards but only 2 of its 16 CPUs: a card job there would strand the rest
    busy = submit(client, lab, "-p", "gpu", "-w", "gpu1", "--cpus-per-task=14", "--mem=8000")
    wait_until(lambda: running(client, busy), 30)
    opts = ("-p", "gpu", "--gres=gpu:1", "--cpus-per-task=2", "--mem=4000")
    slurm = slurms_own_choice(lab, *opts)
    want = scorers_choice(client, Demand(cpus=2, mem_mb=4000, gpus=1))
    assert want != slurm, f"a test of steering needs Slurm to prefer another node ({slurm})"
    with placement.daemon(lab) as d:
        hook_sees(lab, fresh=True)
        card = submit(client, lab, *opts)
        wait_until(lambda: running(client, card), 10, interval=0.1)
        got = job(client, card)
        assert got is not None, d.log.read_text()[-2000:]
        assert got.nodes == want, d.log.read_text()[-3000:]
        assert got.required_nodes == want  # pinned by the daemon, not by luck
        assert decode(got.admin_comment).get("placement") == "deferred"


def test_jobs_deferred_when_the_daemon_dies_start_under_slurms_placement(
    lab: Lab, quiet: SlurmClient
) -> None:
    client = quiet
    shapes = [("--gres=gpu:1",), ("--gres=shard:8",), ("--gres=gpu:2",)]
    with placement.daemon(lab) as d:
        hook_sees(lab, fresh=True)
        d.proc.send_signal(signal.SIGSTOP)  # frozen first, so no job gets placed
        died = time.time()
        waiting = [submit(client, lab, "-p", "gpu", *s) for s in shapes]
        d.kill()
        for j in waiting:
            seen = job(client, j)
            assert seen is not None
            assert seen.is_pending
            assert seen.reason == "BeginTime"
            assert decode(seen.admin_comment).get("placement") == "deferred"
        # the heartbeat lapses: new jobs are no longer deferred
        wait_until(lambda: time.time() - died > 11, 15, interval=0.5)
        late = submit(client, lab, "-p", "gpu", "--gres=shard:4")
        late_job = job(client, late)
        assert late_job is not None
        assert "placement" not in decode(late_job.admin_comment)
        # the deferred ones start when their begin time comes, wherever Slurm puts them
        wait_until(lambda: all(running(client, j) for j in [*waiting, late]), 40)
    for j in waiting:
        seen = job(client, j)
        assert seen is not None
        assert seen.is_running  # none lost
        assert seen.required_nodes == ""  # nobody pinned it: Slurm's own placement
        assert seen.start_time is not None
        assert seen.submit_time is not None
        assert (seen.start_time - seen.submit_time).total_seconds() >= 10


def test_node_weights_come_back_after_a_reconfigure(lab: Lab, quiet: SlurmClient) -> None:
    client = quiet
    with placement.daemon(lab):
        hook_sees(lab, fresh=True)
        card = submit(client, lab, "-p", "gpu", "--gres=gpu:2")
        wait_until(lambda: running(client, card), 10, interval=0.1)

        def weights_right() -> bool:
            nodes = {n.name: n for n in client.nodes()}
            used = {name: nodes[name].gres_used for name in GPU_NODES}
            want = {}
            for name in GPU_NODES:
                n = nodes[name]
                cards = sum(g.count for g in used[name] if g.name == "gpu")
                want[name] = fullness_weight(cards / n.gres_total("gpu"))
            return all(nodes[name].weight == want[name] for name in GPU_NODES)

        wait_until(weights_right, 15)
        client.reconfigure()
        seen = []

        def reset_then_right() -> bool:
            seen.append(weights_right())
            return False in seen and seen[-1]

        wait_until(reset_then_right, 25, interval=0.2)  # slurm.conf's, then ours again
