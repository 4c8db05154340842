"""Crash safety of the policy daemon on the lab: SIGKILL at random moments loses no job and
leaves no hold behind; a restarted daemon repairs its own holds; a slurmctld restart under a
running daemon changes nothing (skipped with ``AIPOOL_SHARED_LAB=1`` on a lab others use)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aipool.lab.cluster import Lab
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from slurm_plugins.policy.state import StateStore
from tests.integration.conftest import wait_until
from tests.integration.test_policy_support import Harness, harness

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
LATER = "--begin=now+1hour"  # pending, never starting during the test


@pytest.fixture
def h(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[Harness]:
    yield from harness(lab, client, tmp_path)


def write_config(h: Harness, policies: list[dict[str, Any]], interval: float = 1) -> Path:
    cfg = h.tmp / "daemon.yaml"
    doc = {
        "interval": interval,
        "state_dir": str(h.tmp / "state"),
        "slurm_conf": h.lab.cfg.env()["SLURM_CONF"],
        "select": {"name_prefix": h.prefix},
        "usage": {"window": "1h", "refresh": "30s"},
        "notify": {"log": True, "file": None},
        "policies": policies,
    }
    cfg.write_text(json.dumps(doc))
    return cfg


def start(cfg: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "slurm_plugins.policy", "-vv", "run", "--config", str(cfg)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def once(cfg: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "slurm_plugins.policy", "run", "--once", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def cycles_logged(log: Path) -> int:
    return log.read_text(errors="replace").count("cycle: ") if log.exists() else 0


def ours(h: Harness) -> dict[int, Any]:
    return {j.job_id: j for j in h.client.jobs() if j.name.startswith(h.prefix)}


def test_sigkill_mid_cycle_loses_no_job_and_leaves_no_hold(h: Harness) -> None:
    rng = random.Random(7)  # noqa: S311 - timing jitter, not secrets
    blocker = h.submit("blocker", "-p", "cpu", hold=True)  # the gang waits for it
    gang = ("-p", "cpu", f"--dependency=afterany:{blocker}")
    labels = "gang=g,gang_size=3"
    members = [h.submit(f"m{i}", *gang, labels=labels) for i in range(2)]
    others = [h.submit(f"o{i}", "-p", "cpu", LATER) for i in range(4)]
    cfg = write_config(h, [{"name": "gang"}, {"name": "priority"}, {"name": "fifo"}])
    log = h.tmp / "daemon.log"
    for k in range(6):
        proc = start(cfg, log)
        before = cycles_logged(log)
        try:
            wait_until(lambda b=before: cycles_logged(log) > b, 60)  # at least one cycle ran
            time.sleep(rng.uniform(0.0, 1.5))  # then die anywhere in the next cycle
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        if k == 3:
            members.append(h.submit("m2", *gang, labels=labels))
    jobs = ours(h)
    assert set(jobs) == {blocker, *members, *others}, "no job lost"
    assert all(jobs[m].held for m in members), "members wait for their dependency, held"
    assert not any(jobs[o].held for o in others)
    # the dependency goes away: a clean daemon releases the whole group and keeps no hold
    h.client.cancel([blocker])
    wait_until(lambda: bool(once(cfg)) and all(h.state(m) is JobState.RUNNING for m in members), 90)
    assert not any(j.held for j in ours(h).values())
    assert StateStore(h.tmp / "state").load().holds == {}


def test_restarted_daemon_repairs_its_own_holds(h: Harness) -> None:
    gang = "gang=r,gang_size=3"
    members = [h.submit(f"r{i}", "-p", "cpu", LATER, labels=gang) for i in range(2)]
    cfg = write_config(h, [{"name": "gang"}])
    once(cfg)
    wait_until(lambda: all(j.held for j in ours(h).values()), 30)
    assert set(StateStore(h.tmp / "state").load().holds) == set(members)
    # the daemon is reconfigured without gangs: its holds are no longer wanted
    cfg = write_config(h, [{"name": "fifo"}])
    out = once(cfg)
    assert "release" in out
    wait_until(lambda: not any(j.held for j in ours(h).values()), 30)
    assert StateStore(h.tmp / "state").load().holds == {}


def test_release_holds_command_hands_back_everything(h: Harness) -> None:
    members = [h.submit(f"x{i}", "-p", "cpu", LATER, labels="gang=x,gang_size=5") for i in range(2)]
    cfg = write_config(h, [{"name": "gang"}])
    once(cfg)
    wait_until(lambda: all(j.held for j in ours(h).values()), 30)
    done = subprocess.run(
        [sys.executable, "-m", "slurm_plugins.policy", "release-holds", "--config", str(cfg)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"released {len(members)} job(s)" in done.stdout
    wait_until(lambda: not any(j.held for j in ours(h).values()), 30)


@pytest.mark.skipif(
    os.environ.get("AIPOOL_SHARED_LAB") == "1",
    reason="restarts slurmctld: not on a lab that others are using (AIPOOL_SHARED_LAB=1)",
)
def test_slurmctld_restart_under_a_running_daemon(h: Harness) -> None:
    gang = "gang=c,gang_size=3"
    members = [h.submit(f"c{i}", "-p", "cpu", LATER, labels=gang) for i in range(2)]
    others = [h.submit(f"k{i}", "-p", "cpu", LATER) for i in range(3)]
    cfg = write_config(h, [{"name": "gang"}, {"name": "fifo"}])
    log = h.tmp / "daemon.log"
    proc = start(cfg, log)
    try:
        wait_until(lambda: all(j.held for j in ours(h).values() if j.job_id in members), 60)
        ctld = h.lab.status()["daemons"]["slurmctld"]["pid"]
        os.kill(ctld, signal.SIGTERM)
        wait_until(lambda: not h.client.ping(), 60)
        wait_until(lambda: "cycle failed" in log.read_text(errors="replace"), 60)
        Lab().up()
        wait_until(h.client.ping, 60)
        n = cycles_logged(log)
        wait_until(lambda: cycles_logged(log) > n + 2, 60)
        assert proc.poll() is None, "the daemon survived the controller's restart"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    jobs = ours(h)
    assert set(jobs) == set(members + others)
    assert all(jobs[m].held for m in members)
    assert not any(jobs[o].held for o in others)
    assert jobs[others[0]].state is JobState.PENDING
