"""The lab side of the live-rules check: a slice (:mod:`sim.labslice`) through the real lab.

Step by step: the jobs due to leave are cancelled (and gone, so slurmctld's scheduler does
not wait on them), the daemon beats so that the admission hook defers what arrives, the
step's jobs are submitted (each must come back deferred and tagged), one daemon cycle pins
and starts them, and slurmctld starts them where it will. What ran where, on which cards, is
read through the client; a job that has not started a few seconds after its release fits
nowhere and is cancelled (it fails). The daemon runs in this process with the lab's
placement settings (``fifo`` and ``placement``, no history: the prediction knows no past),
steering only the slice's jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.labslice import LabTask, steps
from slurm_plugins.client import JobNotFound, SlurmClient
from slurm_plugins.client.labels import tagged_deferred
from slurm_plugins.client.models import Job
from slurm_plugins.policy import collect
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import Daemon
from slurm_plugins.policy.snapshot import NodeInfo

SCRIPT = "#!/bin/bash\nsleep 3600\n"
#: How long a released job may take to start (slurmctld schedules about once a second).
START_S = 3.0


class LabRunError(RuntimeError):
    """The lab cannot run the slice (busy nodes, the hook not deferring, a job stuck)."""


@dataclass
class SliceRun:
    placements: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    cycles: int = 0
    #: per step: the shards in use per card of each GPU node as the daemon read them
    cards_seen: list[dict[str, list[int]]] = field(default_factory=list)


def lab_nodes(client: SlurmClient, partitions: Sequence[str] = ("gpu", "npu")) -> list[NodeInfo]:
    """The nodes of ``partitions`` as the daemon's snapshot has them (empty: checked)."""
    now = time.time()
    jobs = [collect.job_info(j, now=now) for j in client.jobs()]
    running = [j for j in jobs if j.running]
    out = [
        collect.node_info(n, running) for n in client.nodes() if set(n.partitions) & set(partitions)
    ]
    busy = [n.name for n in out if n.alloc_cpus or any(n.card_used) or any(n.npus_used.values())]
    if busy:
        raise LabRunError(f"nodes {', '.join(busy)} are in use: the slice needs them idle")
    return sorted(out, key=lambda n: n.name)


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise LabRunError(f"{what}: not within {timeout:g} s")


class _Runner:
    def __init__(self, client: SlurmClient, daemon: Daemon, prefix: str, workdir: Path) -> None:
        self.client = client
        self.daemon = daemon
        self.prefix = prefix
        self.workdir = workdir
        self.ids: dict[str, int] = {}
        self.run = SliceRun()
        self.beat_at = 0.0

    def beat(self) -> None:
        """Keep the heartbeat fresh for the hook (it looks once a second; lapse 10 s)."""
        if time.monotonic() - self.beat_at > 4:
            self.daemon.beat()
            self.beat_at = time.monotonic()
            time.sleep(1.1)

    def job(self, job_id: int) -> Job | None:
        try:
            return self.client.job(job_id)
        except JobNotFound:
            return None

    def leave(self, tasks: Sequence[LabTask]) -> None:
        ids = [self.ids[t.name] for t in tasks if t.name in self.ids]
        if not ids:
            return
        self.client.cancel(ids)

        def gone() -> bool:
            active = {j.job_id: j for j in self.client.jobs()}
            return not any(i in active for i in ids)

        _wait(gone, 60, f"jobs {ids} to end")

    def arrive(self, tasks: Sequence[LabTask]) -> None:
        self.beat()
        for t in tasks:
            opts = [
                f"--job-name={self.prefix}{t.name}",
                f"--chdir={self.workdir}",
                "--output=/dev/null",
                "--time=60",
                *t.options(),
            ]
            job_id = self.client.submit(SCRIPT, opts)
            self.ids[t.name] = job_id
            seen = self.job(job_id)
            if seen is None or not tagged_deferred(seen.admin_comment):
                raise LabRunError(f"job {job_id} ({t.name}) was not deferred by the admission hook")
        report = self.daemon.cycle()
        if report is None:
            raise LabRunError("the daemon skipped a cycle")
        self.run.cycles += 1
        self.run.cards_seen.append(
            {n.name: list(n.card_used) for n in report.snapshot.nodes if n.gpus}
        )
        for t in tasks:
            self._settle(t)

    def _settle(self, t: LabTask) -> None:
        job_id = self.ids[t.name]
        seen: list[Job] = []

        def started() -> bool:
            j = self.job(job_id)
            if j is None:
                raise LabRunError(f"job {job_id} ({t.name}) left the queue")
            seen[:] = [j]
            return j.is_running

        try:
            _wait(started, START_S, "start")
        except LabRunError:
            self.client.cancel([job_id])  # it fits nowhere: the task fails
            self.run.placements.append(
                {"name": t.name, "job_id": job_id, "node": None, "cards": []}
            )
            del self.ids[t.name]
            return
        info = collect.job_info(seen[0], now=time.time())
        gpu = info.demand.gpus or info.demand.shards
        cards = sorted({c.card for c in info.cards}) if gpu else []
        node = info.nodes[0] if info.nodes else None
        self.run.placements.append({"name": t.name, "job_id": job_id, "node": node, "cards": cards})


def run_live_slice(
    client: SlurmClient,
    tasks: Sequence[LabTask],
    *,
    slurm_conf: str,
    heartbeat: Path,
    state_dir: Path,
    workdir: Path,
    prefix: str,
    scorer: str = "aipool",
) -> SliceRun:
    """Run the slice on the lab as described above; its jobs are cancelled at the end."""
    started = time.monotonic()
    nodes = lab_nodes(client)
    weights = {n.name: n.weight for n in nodes}
    config = parse_config(
        {
            "interval": 60,
            "state_dir": str(state_dir),
            "slurm_conf": slurm_conf,
            "select": {"name_prefix": prefix},
            "usage": {"window": "1h", "refresh": "1h"},
            "notify": {"log": False, "file": None},
            "placement": {"heartbeat": str(heartbeat), "watch": 0},
            "policies": [
                {"name": "fifo"},
                {"name": "placement", "args": {"scorer": scorer, "history": False}},
            ],
        }
    )
    daemon = Daemon(config, client)
    runner = _Runner(client, daemon, prefix, workdir)
    try:
        for leaving, arriving in steps(tasks):
            runner.leave(leaving)
            runner.arrive(arriving)
    finally:
        mine = [j.job_id for j in client.jobs() if j.name.startswith(prefix)]
        if mine:
            client.cancel(mine)
        for name, weight in weights.items():
            client.update_node(name, weight=weight)
        heartbeat.unlink(missing_ok=True)
        time.sleep(1.1)  # the hook looks once a second: what comes next is not deferred
    runner.run.seconds = time.monotonic() - started
    return runner.run
