"""Node health on the real lab: a GPU job runs; the node agent's probe reports an XID on
that node (the lab's fault-injection file); the health check drains the node with the
reason, the policy daemon's reschedule policy moves the job to the other GPU node; the
fault clears and the node returns after ``recover_after`` healthy checks; the admins were
alerted once. Whatever happens, no lab node is left drained by this test."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.lab.cluster import Lab
from plumbing.notify import read_notifications
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.health.checker import Checker, CheckReport
from slurm_plugins.health.verdict import REASON_PREFIX
from slurm_plugins.node.health import health_reporter, report_health
from slurm_plugins.policy.daemon import notifier_for
from slurm_plugins.policy.plan import Action
from tests.integration.conftest import wait_until
from tests.integration.test_policy_support import Harness, harness

pytestmark = pytest.mark.slurm

INVENTORY = Path(__file__).resolve().parents[2] / "gres" / "examples" / "lab.yaml"
GPU_NODES = ("gpu1", "gpu2")
RECOVER_AFTER = 2


@pytest.fixture
def h(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[Harness]:
    yield from harness(lab, client, tmp_path)


def node_of(h: Harness, job_id: int) -> str:
    j = h.job(job_id)
    assert j is not None
    return j.nodes


def _undrain(client: SlurmClient) -> None:
    """Resume every node this test's checker drained (its reason says so)."""
    for n in client.nodes():
        if n.name in GPU_NODES and n.has_state("DRAIN") and n.reason.startswith(REASON_PREFIX):
            client.update_node(n.name, state="RESUME")
    wait_until(lambda: all(n.available for n in client.nodes() if n.name in GPU_NODES), 60)


def test_failing_gpu_node_is_drained_its_job_moves_and_it_returns(h: Harness) -> None:
    faults = h.tmp / "faults.yaml"
    reports = h.tmp / "samples"  # the harness's samples dir: reports sit beside the samples
    daemon = h.daemon(
        [{"name": "reschedule", "args": {"requeue_delay": "3s"}}, {"name": "fifo"}],
        health={"recover_after": RECOVER_AFTER, "nodes": list(GPU_NODES)},
    )
    config = daemon.config
    assert config.health is not None
    checker = Checker(
        config.health,
        h.client,
        notifier_for(config),
        state_dir=config.state_dir,
        admins=config.engine.admins,
    )
    agents = [
        health_reporter(f"file:{h.tmp / 'util'}", n, inventory=INVENTORY, faults=faults)
        for n in GPU_NODES
    ]

    def check() -> CheckReport:
        for agent in agents:  # each node's agent reports, then the controller checks
            report_health(reports, agent)
        return checker.check()

    job = h.submit("xid", "-p", "gpu", "--gres=gpu:1")
    h.drive(daemon, lambda: h.state(job) is JobState.RUNNING, 60)
    first = node_of(h, job)
    try:
        healthy = check()
        assert [v.node for v in healthy.plan.verdicts if v.healthy] == list(GPU_NODES)
        assert not healthy.plan.drains

        faults.write_text(
            f"nodes:\n  {first}:\n    devices: [{{kind: gpu, index: 0, errors: [xid 79]}}]\n"
        )
        t0 = time.monotonic()
        failing = check()
        assert [(d.node, d.reason) for d in failing.plan.drains] == [
            (first, "health: gpu 0: xid 79")
        ]
        node = next(n for n in h.client.nodes() if n.name == first)
        assert node.has_state("DRAIN")
        assert node.reason == "health: gpu 0: xid 79"

        def moved() -> bool:
            check()  # still failing: checked again, nothing new drained or told
            j = h.job(job)
            return j is not None and j.state is JobState.RUNNING and j.nodes != first

        h.drive(daemon, moved, 120)
        took = time.monotonic() - t0
        print(f"\nnode health: xid on {first} -> job {job} on {node_of(h, job)} in {took:.1f} s")

        requeues = [
            a.reason
            for r in h.reports
            for a in r.plan.actions_of(Action.REQUEUE)
            if a.job_id == job
        ]
        assert requeues
        assert f"node {first} drained (health: gpu 0: xid 79)" in requeues[0]

        faults.write_text("")  # the fault clears
        checks = [check() for _ in range(RECOVER_AFTER)]
        assert not checks[0].plan.resumes
        assert [r.node for r in checks[-1].plan.resumes] == [first]
        wait_until(lambda: next(n for n in h.client.nodes() if n.name == first).available, 30)
    finally:
        _undrain(h.client)

    notes = [n for n in read_notifications(h.tmp / "notes.jsonl") if n["job_id"] == 0]
    assert [(n["kind"], n["subject"]) for n in notes] == [
        ("node_drained", f"aipool: node {first} drained: health: gpu 0: xid 79"),
        (
            "node_resumed",
            f"aipool: node {first} returned to service: healthy for 2 consecutive checks",
        ),
    ]
    assert all(n["users"] == ["root"] for n in notes)


def test_check_command_dry_run_plans_but_changes_nothing(lab: Lab, tmp_path: Path) -> None:
    """``aipool health check --dry-run --json`` on the lab: the drain is planned and shown,
    Slurm is not touched, no alert is sent, no state is written."""
    import json

    from click.testing import CliRunner

    from slurm_plugins.health.cli import cli

    faults = tmp_path / "faults.yaml"
    faults.write_text("nodes: {gpu2: {devices: [{kind: gpu, index: 3, missing: true}]}}\n")
    for n in GPU_NODES:
        report_health(
            tmp_path / "reports", health_reporter("", n, inventory=INVENTORY, faults=faults)
        )
    conf = tmp_path / "daemon.yaml"
    conf.write_text(
        f"state_dir: {tmp_path / 'state'}\n"
        f"slurm_conf: {lab.cfg.env()['SLURM_CONF']}\n"
        f"notify: {{log: false, file: {tmp_path / 'notes.jsonl'}}}\n"
        "policies: [{name: fifo}]\n"
        f"health: {{reports: {tmp_path / 'reports'}, nodes: [gpu1, gpu2]}}\n"
    )
    res = CliRunner().invoke(cli, ["check", "--config", str(conf), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.output)
    assert plan["drains"] == [{"node": "gpu2", "reason": "health: gpu: 3 of 4 visible"}]
    assert [v["node"] for v in plan["verdicts"]] == ["gpu1", "gpu2"]
    client = SlurmClient(env=lab.cfg.env(), timeout=30)
    assert next(n for n in client.nodes() if n.name == "gpu2").available
    assert not (tmp_path / "notes.jsonl").exists()
    assert not (tmp_path / "state" / "health.json").exists()
