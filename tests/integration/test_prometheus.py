"""Debian's real Prometheus scraping the lab's services, asked through its HTTP API.

Once per module: the lab services (``aipool lab services up``, started here when they are
not running) and ``prometheus`` as its own user with the lab's rendered configuration (a copy
scraping every second), its data under the lab's run directory, on a free loopback port.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from aipool.lab import host, metrics, services
from aipool.lab.cluster import Lab
from aipool.lab.config import DEFAULT_ROOT
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import wait_job
from tests.unit.prometheus.promtool import check_config, check_metrics

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="prometheus is not installed: scripts/bootstrap.sh installs it"
    ),
]

SLEEP = "#!/bin/bash\nsleep 300\n"
SHARDS = 8
DEADLINE = 90  # the policy daemon reads the pool every 10 s; Prometheus scrapes every 1 s


@dataclass(frozen=True)
class Prometheus:
    url: str
    log: Path

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's vector (``[]`` when nothing matches)."""
        resp = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = resp.json()
        assert body.get("status") == "success", f"query {expr!r}: {resp.status_code} {body}"
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def targets(self) -> list[dict[str, Any]]:
        resp = httpx.get(f"{self.url}/api/v1/targets", timeout=10)
        active: list[dict[str, Any]] = resp.json()["data"]["activeTargets"]
        return active

    def report(self) -> str:
        """What Prometheus says of each target, for a failure message."""
        lines = [
            f"  {t['labels'].get('job')} {t['scrapeUrl']}: {t['health']} {t.get('lastError', '')}"
            for t in self.targets()
        ]
        return "Prometheus's targets:\n" + "\n".join(lines)

    def wait(self, expr: str, ok: Callable[[list[dict[str, Any]]], bool], what: str) -> Any:
        """Query ``expr`` until ``ok`` holds for its vector; returns the vector."""
        deadline = time.monotonic() + DEADLINE
        seen: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            seen = self.query(expr)
            if ok(seen):
                return seen
            time.sleep(0.5)
        pytest.fail(f"{what}: {expr!r} gave {seen} for {DEADLINE} s\n{self.report()}")


def value(vector: list[dict[str, Any]]) -> float:
    """The one sample's value of a vector (sum it in the query where several match)."""
    assert len(vector) == 1, vector
    return float(vector[0]["value"][1])


@pytest.fixture(scope="module")
def running(lab: Lab) -> Iterator[Lab]:
    """The lab's services, started here if they were not running (and then stopped here)."""
    if lab.cfg.root != DEFAULT_ROOT:
        pytest.fail(f"the policy daemon and agents run only in the lab at {DEFAULT_ROOT}")
    info = services.up(lab)
    try:
        yield lab
    finally:
        if info.started:
            services.down(lab)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture(scope="module")
def prometheus(running: Lab) -> Iterator[Prometheus]:
    assert PROMETHEUS is not None  # the module is skipped without it
    cfg = running.cfg
    user = metrics.PROMETHEUS_USER
    work = host.make_service_dir(cfg.run / "prometheus-test", 0o700, name=user)
    doc = yaml.safe_load(metrics.config_file(cfg).read_text())
    doc["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    conf = work / "prometheus.yml"
    conf.write_text(yaml.safe_dump(doc, sort_keys=False))
    shutil.chown(conf, user, user)
    check_config(conf)  # the lab's configuration, its rules and the token all load
    url = f"http://127.0.0.1:{free_port()}"
    argv = [
        "setpriv",
        f"--reuid={user}",
        f"--regid={user}",
        "--init-groups",
        PROMETHEUS,
        f"--config.file={conf}",
        f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ]
    log = work / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=work)
    try:
        deadline = time.monotonic() + 30
        while not _ready(url):
            tail = log.read_text(errors="replace")[-2000:]
            assert proc.poll() is None, f"prometheus exited {proc.returncode}:\n{tail}"
            assert time.monotonic() < deadline, f"prometheus not ready in 30 s:\n{tail}"
            time.sleep(0.2)
        yield Prometheus(url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def _ready(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
    return False


def all_up(prometheus: Prometheus, lab: Lab) -> set[tuple[str, str]]:
    """Wait until every (job, address) of the lab's configuration is up; returns them."""
    listed = metrics.endpoints(lab.cfg)["jobs"]
    expected = {(job, a) for job, where in listed.items() for a in where}

    def up(vector: list[dict[str, Any]]) -> bool:
        return {(s["metric"]["job"], s["metric"]["instance"]) for s in vector} == expected

    prometheus.wait('up{job=~"aipool-.*"} == 1', up, "every target up")
    return expected


def test_every_service_of_the_lab_is_scraped(prometheus: Prometheus, running: Lab) -> None:
    expected = all_up(prometheus, running)
    jobs = {"aipool-policy", "aipool-health", "aipool-accounting", "aipool-node", "aipool-portal"}
    assert {job for job, _ in expected} == jobs
    agents = {a for job, a in expected if job == "aipool-node"}
    assert len(agents) == len(running.inventory().nodes)
    # the portal's own series come through its token
    served = prometheus.wait(
        'aipool_portal_requests_total{endpoint="metrics"}', bool, "the portal's request counts"
    )
    assert sum(float(s["value"][1]) for s in served) >= 1


def test_what_each_service_serves_passes_promtool(prometheus: Prometheus, running: Lab) -> None:
    all_up(prometheus, running)
    token = metrics.token_file(running.cfg).read_text().strip()
    for target in prometheus.targets():
        job = target["labels"]["job"]
        # every /metrics wants the token (docs/security.md): none is open without it
        bare = httpx.get(target["scrapeUrl"], timeout=10)
        assert bare.status_code in (401, 403), (job, target["scrapeUrl"], bare.status_code)
        auth = {"Authorization": f"Bearer {token}"}
        resp = httpx.get(target["scrapeUrl"], headers=auth, timeout=10)
        assert resp.status_code == 200, (target["scrapeUrl"], resp.status_code)
        check_metrics(resp.text)


def test_a_nodes_card_count(prometheus: Prometheus, running: Lab) -> None:
    cards = {n.name: len(n.gpus) + len(n.npus) for n in running.inventory().nodes}
    for node, count in cards.items():
        if not count:
            continue
        expr = f'sum(aipool_node_cards{{cluster="{running.cfg.cluster}",node="{node}"}})'
        got = prometheus.wait(expr, bool, f"{node}'s cards")
        assert value(got) == count, f"{node}: {got}, the inventory has {count} cards"


def test_the_policy_daemons_cycle_time(prometheus: Prometheus) -> None:
    count = prometheus.wait(
        "aipool_policy_cycle_seconds_count", lambda v: bool(v) and value(v) >= 1, "a cycle"
    )
    total = value(prometheus.query("aipool_policy_cycle_seconds_sum"))
    assert 0 < total / value(count) < 30, (total, count)
    phases = prometheus.query("aipool_policy_last_cycle_phase_seconds")
    assert {s["metric"]["phase"] for s in phases} == {"read", "plan", "apply"}


def used_shards(prometheus: Prometheus, cluster: str) -> dict[str, float]:
    vector = prometheus.query(
        f'aipool_node_slices{{cluster="{cluster}",type="shard",state="used"}}'
    )
    return {s["metric"]["node"]: float(s["value"][1]) for s in vector}


def test_a_running_shard_jobs_allocation(
    prometheus: Prometheus, running: Lab, client: SlurmClient
) -> None:
    cluster = running.cfg.cluster
    gpu_nodes = {n.name for n in running.inventory().nodes if n.gpus}
    expr = f'aipool_node_slices{{cluster="{cluster}",type="shard",state="used"}}'
    prometheus.wait(expr, lambda v: {s["metric"]["node"] for s in v} == gpu_nodes, "shards")
    before = used_shards(prometheus, cluster)
    options = [
        f"--chdir={running.cfg.jobs}",
        "--output=/dev/null",
        "--time=10",
        "--partition=gpu",
        f"--gres=shard:{SHARDS}",
    ]
    job_id = client.submit(SLEEP, options, as_user="alice")
    job = wait_job(client, job_id, lambda j: j.is_running and bool(j.nodes), DEADLINE)
    node = job.nodes
    assert node in gpu_nodes, f"job {job_id} runs on {node!r}"
    want = before[node] + SHARDS
    prometheus.wait(
        f'aipool_node_slices{{cluster="{cluster}",node="{node}",type="shard",state="used"}}',
        lambda v: bool(v) and value(v) == want,
        f"job {job_id}'s {SHARDS} shards on {node} (used before: {before[node]:g})",
    )
    # the shipped rules run on it: the pool's GPU use is no longer nothing
    ratio = prometheus.wait(
        f'cluster_kind:aipool_pool_cards_used:ratio{{cluster="{cluster}",kind="gpu"}}',
        lambda v: bool(v) and value(v) > 0,
        "the recorded GPU use",
    )
    assert value(ratio) <= 1
    jobs = prometheus.wait(
        f'sum(aipool_jobs{{cluster="{cluster}",partition="gpu",state="running"}})',
        lambda v: bool(v) and value(v) >= 1,
        "the running job counted",
    )
    assert value(jobs) >= 1
