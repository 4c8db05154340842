"""The lab side of the consistency check: a trace slice through the real lab and the daemon.

:func:`run_slice` submits a slice (:func:`sim.consistency.scale_slice`) to the lab's GPU
partition one task at a time, in order, each held with the ``admit`` label so that the
policy daemon's ``placement`` policy judges it first (pins a share of a card to the
scorer's node, weights the nodes) and releases it; then reads where slurmctld started it
and on which cards (``scontrol show job -d``'s ``GRES=…(IDX:…)``, through the client). A
task that slurmctld cannot start is cancelled, as the FGD protocol fails a task that does
not fit (no departures, no retries). For every start it also records the node's free
shards per card just before, so slurmctld's own card choice can be checked against the
simulator's model (:func:`gres.placement.cards_slurm`) independently of the node choice.

This module drives Slurm (through :mod:`slurm_plugins.client` and the daemon), unlike the
rest of :mod:`sim`; it is used by the lab test and ``bench/sim_consistency.py``.

:func:`probe_cards` asks slurmctld alone (jobs pinned to one node, no daemon) for a
sequence of requests chosen so that the candidate rules for its card choice disagree:
lowest card with room (the model), tightest fit, least used card.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gres.placement import MILLI, NodeView, Request, cards_ideal, cards_slurm
from sim.cluster import SHARDS, Grid
from sim.consistency import sbatch_resources
from sim.trace import NodeSpec, Task
from slurm_plugins.client import JobNotFound, SlurmClient
from slurm_plugins.client.models import Job, JobState
from slurm_plugins.policy import collect
from slurm_plugins.policy.config import parse_config
from slurm_plugins.policy.daemon import CycleReport, Daemon
from slurm_plugins.policy.snapshot import NodeInfo

SCRIPT = "#!/bin/bash\nsleep 900\n"
#: Reasons a pending job carries before slurmctld has judged it.
UNJUDGED = frozenset({"", "None", "JobHeldUser", "JobHeldAdmin"})


class LabCheckError(RuntimeError):
    """The lab cannot run the check (busy GPU nodes, a job that never settles)."""


@dataclass
class LabRun:
    """What the lab did with a slice."""

    #: ``{"name", "job_id", "node", "cards"}`` per task; ``node`` None: it did not start.
    placements: list[dict[str, Any]] = field(default_factory=list)
    #: Per started GPU task: the node's free shards per card before, the cards slurmctld
    #: gave, and the cards the model says it gives.
    card_choices: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def lab_nodes(client: SlurmClient, partition: str = "gpu") -> list[NodeSpec]:
    """The partition's GPU nodes as the simulator's node list."""
    out = []
    for n in client.nodes():
        gpus = n.gres_total("gpu")
        if partition in n.partitions and gpus:
            model = next((g.type for g in n.gres if g.name == "gpu" and g.type), "") or ""
            out.append(NodeSpec(n.name, n.cpus * 1000, n.real_memory, gpus, model))
    return sorted(out, key=lambda s: s.name)


def model_cards(request: Request, node: NodeInfo) -> tuple[int, ...]:
    """The cards :func:`gres.placement.cards_slurm` predicts on ``node`` as it is now."""
    spg = node.shards_per_gpu
    used = node.card_used or (0,) * node.gpus
    free = tuple(max(spg - u, 0) * MILLI // spg for u in used)
    view = NodeView(node.name, node.gpu_type or "", 0, 0, free, 0, 0)
    return cards_slurm(request, view)


#: Requests of the card-choice probe, in order, on one idle node of 4 cards x 32 shards:
#: after the first three, cards have 12, 16, 2 and 32 shards free, so ``shard:2`` tells the
#: lowest card with room (0) from the tightest fit (2) and the least used card (3); the
#: last cannot fit on one card although the node has that many shards free in all.
PROBE = ("shard:20", "shard:16", "shard:30", "shard:2", "gpu:1", "shard:9", "shard:17")


def _request(gres: str, spg: int) -> Request:
    kind, _, n = gres.partition(":")
    if kind == "shard":
        return Request(1000, 1000, min(MILLI, int(n) * MILLI // spg), 1)
    return Request(1000, 1000, MILLI, int(n))


def _free_cards(client: SlurmClient, node: str, gpus: int, spg: int) -> list[int]:
    """Free shards per card of ``node`` now, from the running jobs' GRES detail."""
    used = [0] * gpus
    now = time.time()
    for j in client.jobs():
        if j.is_running:
            for c in collect.job_info(j, now=now).cards:
                if c.node == node and 0 <= c.card < gpus:
                    used[c.card] += c.shards
    return [max(spg - u, 0) for u in used]


def probe_cards(
    client: SlurmClient,
    node: NodeSpec,
    *,
    prefix: str,
    workdir: Path,
    partition: str = "gpu",
    requests: Sequence[str] = PROBE,
    spg: int = SHARDS.units,
    timeout: float = 60.0,
) -> list[dict[str, Any]]:
    """slurmctld's card choice for ``requests`` pinned to ``node`` (idle at the start), one
    at a time; per request the free shards before, the cards it gave (``[]``: it did not
    start) and what each candidate rule predicts. Jobs are cancelled at the end."""
    out: list[dict[str, Any]] = []
    wait_idle(client, {node.name}, timeout)
    try:
        for k, gres in enumerate(requests):
            free = _free_cards(client, node.name, node.gpu_count, spg)
            view = NodeView(
                node.name, node.gpu_model, 0, 0, tuple(f * MILLI // spg for f in free), 0, 0
            )
            request = _request(gres, spg)
            most_free = max(range(len(free)), key=lambda i: (free[i], -i))
            options = [
                f"--job-name={prefix}probe{k}",
                f"--partition={partition}",
                f"--nodelist={node.name}",
                f"--chdir={workdir}",
                "--output=/dev/null",
                "--time=30",
                "--cpus-per-task=1",
                "--mem=1000M",
                f"--gres={gres}",
            ]
            job = _settle(client, client.submit(SCRIPT, options), timeout)
            info = collect.job_info(job, now=time.time())
            out.append(
                {
                    "request": gres,
                    "free_before": free,
                    "cards": sorted({c.card for c in info.cards}),
                    "model": list(cards_slurm(request, view)),
                    "tightest": list(cards_ideal(request, view)),
                    "least_used": [most_free] if request.is_fractional else [],
                }
            )
    finally:
        mine = [j.job_id for j in client.jobs() if j.name.startswith(prefix)]
        if mine:
            client.cancel(mine)
    return out


def wait_idle(client: SlurmClient, names: set[str], timeout: float) -> None:
    """Until slurmctld has nothing allocated on ``names`` (ending jobs included) and they
    take work."""

    def idle() -> bool:
        nodes = [n for n in client.nodes() if n.name in names]
        return all(n.available and n.alloc_cpus == 0 for n in nodes)

    _wait(idle, timeout, f"nodes {', '.join(sorted(names))} to be idle and up")


def _settle(client: SlurmClient, job_id: int, timeout: float) -> Job:
    """The job once slurmctld started it or said why not."""
    seen: list[Job] = []

    def settled() -> bool:
        seen[:] = [client.job(job_id)]
        j = seen[0]
        return j.is_running or (j.is_pending and j.reason not in UNJUDGED)

    _wait(settled, timeout, f"probe job {job_id} to start or be refused")
    return seen[0]


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise LabCheckError(f"{what}: not within {timeout:g} s")


class _Runner:
    def __init__(
        self,
        client: SlurmClient,
        *,
        partition: str,
        prefix: str,
        workdir: Path,
        daemon: Daemon,
        grid: Grid,
    ) -> None:
        self.client = client
        self.partition = partition
        self.prefix = prefix
        self.workdir = workdir
        self.daemon = daemon
        self.grid = grid
        self.run = LabRun()

    def cycle(self) -> CycleReport:
        report = self.daemon.cycle()
        if report is None:
            raise LabCheckError("the daemon skipped a cycle")
        return report

    def job(self, job_id: int) -> Job | None:
        try:
            return self.client.job(job_id)
        except JobNotFound:
            return None

    def one(self, task: Task, timeout: float) -> None:
        self.cycle()  # node weights follow the last start before the next job arrives
        options = [
            f"--job-name={self.prefix}{task.name}",
            f"--partition={self.partition}",
            f"--chdir={self.workdir}",
            "--output=/dev/null",
            "--time=30",
            "--hold",
            "--comment=aipool:admit=lab-check",
            *sbatch_resources(task, self.grid),
        ]
        job_id = self.client.submit(SCRIPT, options)
        before: dict[str, NodeInfo] = {}
        seen: list[Job] = []

        def settled() -> bool:
            report = self.cycle()
            if any(h.job_id == job_id for h in report.plan.releases):
                before.update({n.name: n for n in report.snapshot.nodes})
            j = self.job(job_id)
            if j is None:
                raise LabCheckError(f"job {job_id} ({task.name}) left the queue")
            seen[:] = [j]
            if j.state is JobState.RUNNING:
                return True
            return j.state is JobState.PENDING and not j.held and j.reason not in UNJUDGED

        _wait(settled, timeout, f"job {job_id} ({task.name}) to start or be refused")
        j = seen[0]
        if j.state is not JobState.RUNNING:
            self.client.cancel([job_id])  # it does not fit: the task fails
            self.run.placements.append(
                {"name": task.name, "job_id": job_id, "node": None, "cards": []}
            )
            return
        info = collect.job_info(j, now=time.time())
        node = info.nodes[0] if info.nodes else None
        cards = sorted({c.card for c in info.cards})
        self.run.placements.append(
            {"name": task.name, "job_id": job_id, "node": node, "cards": cards}
        )
        request = self.grid.snap(task.request)
        if request.gpu_count and node in before:
            n = before[node]
            self.run.card_choices.append(
                {
                    "name": task.name,
                    "node": node,
                    "request": (
                        f"shard:{self.grid.to_units(request.gpu_milli)}"
                        if request.is_fractional
                        else f"gpu:{request.gpu_count}"
                    ),
                    "free_before": [n.shards_per_gpu - u for u in n.card_used],
                    "cards": cards,
                    "model": list(model_cards(request, n)),
                }
            )


def run_slice(
    client: SlurmClient,
    tasks: Sequence[Task],
    *,
    slurm_conf: str,
    state_dir: Path,
    workdir: Path,
    prefix: str,
    partition: str = "gpu",
    scorer: str = "aipool",
    grid: Grid = SHARDS,
    timeout: float = 60.0,
) -> LabRun:
    """Submit ``tasks`` one at a time through the daemon's placement steering; see module."""
    started = time.monotonic()
    names = {s.name for s in lab_nodes(client, partition)}
    if not names:
        raise LabCheckError(f"partition {partition} has no GPU nodes")

    wait_idle(client, names, timeout)
    weights = {n.name: n.weight for n in client.nodes() if n.name in names}
    config = parse_config(
        {
            "interval": 2,
            "state_dir": str(state_dir),
            "slurm_conf": slurm_conf,
            "select": {"name_prefix": prefix, "partitions": [partition]},
            "usage": {"window": "1h", "refresh": "1h"},
            "notify": {"log": False, "file": None},
            "policies": [{"name": "placement", "args": {"scorer": scorer}}],
        }
    )
    runner = _Runner(
        client,
        partition=partition,
        prefix=prefix,
        workdir=workdir,
        daemon=Daemon(config, client),
        grid=grid,
    )
    try:
        for task in tasks:
            runner.one(task, timeout)
    finally:
        mine = [j.job_id for j in client.jobs() if j.name.startswith(prefix)]
        if mine:
            client.cancel(mine)
        for name, weight in weights.items():
            client.update_node(name, weight=weight)
    runner.run.seconds = time.monotonic() - started
    return runner.run
