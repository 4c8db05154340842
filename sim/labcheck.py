"""slurmctld's own card choice inside a node, observed on the lab.

:func:`probe_cards` asks slurmctld alone (jobs pinned to one node, no daemon) for a
sequence of requests chosen so that the candidate rules for its card choice disagree:
lowest card with room (the model, :func:`gres.placement.cards_slurm`), tightest fit, least
used card. This module drives Slurm (through :mod:`slurm_plugins.client`), unlike most of
:mod:`sim`; the placement check of a whole slice is :mod:`sim.labrun`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gres.placement import MILLI, NodeView, Request, cards_ideal, cards_slurm
from sim.cluster import SHARDS
from sim.trace import NodeSpec
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import Job
from slurm_plugins.client.versions import Release, shards_across_cards
from slurm_plugins.policy import collect
from slurm_plugins.policy.snapshot import NodeInfo

SCRIPT = "#!/bin/bash\nsleep 900\n"
#: Reasons a pending job carries before slurmctld has judged it.
UNJUDGED = frozenset({"", "None", "JobHeldUser", "JobHeldAdmin"})


class LabCheckError(RuntimeError):
    """The lab cannot run the check (busy GPU nodes, a job that never settles)."""


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
    release: Release = (22, 5),
) -> list[dict[str, Any]]:
    """slurmctld's card choice for ``requests`` pinned to ``node`` (idle at the start), one
    at a time; per request the free shards before, the cards it gave (``[]``: it did not
    start) and what each candidate rule predicts. Jobs are cancelled at the end. On a
    ``release`` that takes one job's shards from several cards, the model does so for a
    request no single card has room for (each card's free shards in order)."""
    across = shards_across_cards(release)
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
                    "model": list(cards_slurm(request, view))
                    or (
                        _across_cards(free, int(gres.split(":")[1]))
                        if across and gres.startswith("shard:")
                        else []
                    ),
                    "tightest": list(cards_ideal(request, view)),
                    "least_used": [most_free] if request.is_fractional else [],
                }
            )
    finally:
        mine = [j.job_id for j in client.jobs() if j.name.startswith(prefix)]
        if mine:
            client.cancel(mine)
    return out


def _across_cards(free: Sequence[int], shards: int) -> list[int]:
    """The cards a shard request takes when no one card has room (23.11+), or []."""
    picks = []
    for card, room in enumerate(free):
        if shards > 0 and room:
            picks.append(card)
            shards -= room
    return picks if shards <= 0 else []


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
        # a job the hook deferred for the placement daemon is not judged yet either: 24.11
        # shows its reason as BeginTime at once, 22.05 only once the scheduler has looked
        waiting = j.reason in UNJUDGED or collect.deferred(j, time.time())
        return j.is_running or (j.is_pending and not waiting)

    _wait(settled, timeout, f"probe job {job_id} to start or be refused")
    return seen[0]


def _wait(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise LabCheckError(f"{what}: not within {timeout:g} s")
