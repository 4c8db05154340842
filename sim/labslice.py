"""A slice of the trace for the whole lab, with departures, and where the live path puts it.

The live-rules check (``bench/sim_consistency.py``, ``tests/integration/test_sim_consistency.py``)
replays a few hundred trace tasks on the lab through the placement daemon and compares each
placement with :func:`predict_live`, which runs the daemon's own engine on a virtual copy
of the lab. :func:`make_slice` turns trace tasks into lab jobs of every shape the live path
places — whole and several GPUs, shares of a GPU (shards), NPUs and vNPUs, CPU work on GPU
nodes — with CPU and memory scaled to the lab's nodes, and gives each a life of 2-5 steps:
a step submits ``batch`` tasks (after the jobs due to leave have left), the daemon pins and
starts them in one cycle, and slurmctld starts them on their pins with its own cards; a task
that fits nowhere is cancelled (it fails, as in the FGD protocol).
"""

from __future__ import annotations

import csv
import json
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from gres.placement import MILLI
from plumbing import codec
from sim.trace import Task
from slurm_plugins.client.versions import Release, keeps_shard_marks
from slurm_plugins.policy.cluster import ClusterView, first_fit
from slurm_plugins.policy.engine import EngineConfig, PolicyConfig, plan
from slurm_plugins.policy.resources import Demand
from slurm_plugins.policy.snapshot import CardUse, DaemonState, JobInfo, NodeInfo, Snapshot

COLUMNS = ("name", "partition", "cpus", "mem_mb", "gres", "step", "leaves")
SPG = 32
#: The trace's commonest GPU node (96 CPUs, 384 GiB, 8 cards) against a lab node's share per
#: card (16 CPUs, 64,000 MB, 4 cards): what a task asks per card is kept.
CPU_SCALE = (16 / 4) / (96 / 8)
MEM_SCALE = (64_000 / 4) / (393_216 / 8)
LAB_CARDS, LAB_CPUS, LAB_MEM_MB = 4, 16, 64_000


@dataclass(frozen=True, slots=True)
class LabTask:
    """One job of the slice: its sbatch resources, when it arrives and when it leaves."""

    name: str
    partition: str
    cpus: int
    mem_mb: int
    gres: str  # "" for CPU work
    step: int
    leaves: int  # the step at whose start it is cancelled

    @property
    def demand(self) -> Demand:
        d = Demand(self.cpus, self.mem_mb)
        kind, _, rest = self.gres.partition(":")
        if kind == "gpu":
            return replace(d, gpus=int(rest))
        if kind == "shard":
            return replace(d, shards=int(rest))
        if kind == "npu":
            typ, _, n = rest.partition(":")
            return replace(d, npus=int(n), npu_type=typ)
        return d

    def options(self) -> list[str]:
        opts = [f"--partition={self.partition}", f"--cpus-per-task={self.cpus}"]
        opts.append(f"--mem={self.mem_mb}M")
        if self.gres:
            opts.append(f"--gres={self.gres}")
        return opts


def make_slice(tasks: Sequence[Task], *, start: int, count: int, batch: int = 3) -> list[LabTask]:
    """``count`` tasks of the trace from ``start`` as lab jobs, ``batch`` a step.

    A task's name decides what it becomes, the same every time: a quarter of the card tasks
    become NPU work (whole cards on ``910b``; shares on the vNPUs: a half for 1/2 a card or
    more, else a quarter); a fifth of the one-card GPU tasks ask for two cards (the trace
    has few several-card tasks the lab can hold), tasks of more cards than a lab node has
    for all four; CPU-only tasks stay CPU work on the GPU nodes. Each lives 2-5 steps."""
    out: list[LabTask] = []
    for task in tasks[start:]:
        if len(out) >= count:
            break
        out.append(_lab_job(task, len(out) // batch))
    return out


def _lab_job(task: Task, step: int) -> LabTask:
    r = task.request
    h = zlib.crc32(task.name.encode())
    leaves = step + 2 + (h >> 8) % 4
    cards = r.gpu_count
    scale = 1.0
    if cards > LAB_CARDS:  # a whole trace node's worth becomes a whole lab node's
        scale, cards = LAB_CARDS / cards, LAB_CARDS
    elif cards == 1 and not r.is_fractional and (h >> 4) % 5 == 0:
        scale, cards = 2.0, 2
    cpus = min(LAB_CPUS, max(1, math.ceil(r.cpu_milli * CPU_SCALE * scale / 1000)))
    mem = min(LAB_MEM_MB, max(100, math.ceil(r.mem_mib * MEM_SCALE * scale)))
    if cards == 0:
        return LabTask(task.name, "gpu", min(cpus, 8), mem, "", step, leaves)
    npu = h % 4 == 0
    if r.is_fractional:
        if npu:
            vnpu = "910b_vir10" if r.gpu_milli >= 500 else "910b_vir05"
            return LabTask(task.name, "npu", cpus, mem, f"npu:{vnpu}:1", step, leaves)
        shards = math.ceil(r.gpu_milli * SPG / MILLI)
        return LabTask(task.name, "gpu", cpus, mem, f"shard:{shards}", step, leaves)
    if npu:
        return LabTask(task.name, "npu", cpus, mem, f"npu:910b:{cards}", step, leaves)
    return LabTask(task.name, "gpu", cpus, mem, f"gpu:{cards}", step, leaves)


def steps(tasks: Sequence[LabTask]) -> list[tuple[list[LabTask], list[LabTask]]]:
    """Per step: the tasks that leave at its start, then those that arrive."""
    last = max((t.step for t in tasks), default=-1)
    return [
        ([t for t in tasks if t.leaves == k], [t for t in tasks if t.step == k])
        for k in range(last + 1)
    ]


# ---------------------------------------------------------------------- the prediction
def predict_live(
    nodes: Sequence[NodeInfo],
    tasks: Sequence[LabTask],
    *,
    scorer: str = "aipool",
    daemon: bool = True,
    release: Release = (22, 5),
) -> list[dict[str, Any]]:
    """Where each task lands when the live path places the slice: the daemon's engine
    (``fifo`` and ``placement``, no history) plans each step on a virtual lab, then
    slurmctld starts what it released: on the pin, with its own cards. ``daemon=False``:
    Slurm alone (no pins, no weights of the daemon's), the baseline. ``release``: the Slurm
    whose card marks are modelled (:func:`versions.keeps_shard_marks`)."""
    kept = keeps_shard_marks(release)
    policies = (
        PolicyConfig("fifo"),
        PolicyConfig("placement", args={"scorer": scorer, "history": False}),
    )
    config = EngineConfig(policies=policies if daemon else (PolicyConfig("fifo"),))
    running: dict[str, JobInfo] = {}
    ids = {t.name: k + 1 for k, t in enumerate(tasks)}
    weights = {n.name: n.weight for n in nodes}
    #: the cards slurmctld counts as in use; on 22.05 a shard job that ends clears its
    #: card's mark even while other shard jobs stay on it, as sinfo then shows it
    marks: dict[str, set[int]] = {n.name: set() for n in nodes}
    state = DaemonState()
    out: list[dict[str, Any]] = []
    for k, (leaving, arriving) in enumerate(steps(tasks)):
        for t in leaving:
            gone = running.pop(t.name, None)
            for c in gone.cards if gone is not None else ():
                marks[c.node].discard(c.card)
            if kept:  # newer releases: a card stays marked while any of its jobs runs
                for j in running.values():
                    for c in j.cards:
                        marks[c.node].add(c.card)
        now = 1_800_000_000.0 + 60 * k
        pending = [_pending(t, ids[t.name], now) for t in arriving]
        base = occupied(nodes, running.values(), weights, marks)
        p = plan(Snapshot(now, (*running.values(), *pending), base, state=state), config)
        state = p.state
        weights.update({w.node: w.weight for w in p.node_weights})
        pins = {c.job_id: c.req_nodes for c in p.job_changes if c.req_nodes}
        excluded = {c.job_id: c.exc_nodes for c in p.job_changes if c.exc_nodes}
        view = ClusterView(occupied(nodes, running.values(), weights, marks))
        by_id = {j.job_id: j for j in pending}
        for job_id in p.order:
            job = by_id[job_id]
            pin = pins.get(job_id)
            if job_id in excluded:
                job = replace(job, excluded_nodes=tuple(excluded[job_id].split(",")))
            found = _slurm_start(view, job, pin.split(",") if pin else ())
            task = next(t for t in arriving if ids[t.name] == job_id)
            if found is None:
                out.append({"name": task.name, "node": None, "cards": []})
                continue
            view.reserve(job, found)
            cards = tuple(CardUse(n, c, s) for n, c, s in view.held(job_id))
            for c in cards:
                marks[c.node].add(c.card)
            running[task.name] = replace(job, state="RUNNING", nodes=found, cards=cards)
            gpu = job.demand.gpus or job.demand.shards
            shown = sorted({c.card for c in cards}) if gpu else []
            out.append({"name": task.name, "node": found[0], "cards": shown})
    return out


def _pending(t: LabTask, job_id: int, now: float) -> JobInfo:
    return JobInfo(
        job_id,
        "root",
        "root",
        t.partition,
        "normal",
        "PENDING",
        now - 1 + job_id * 1e-6,
        name=t.name,
        reason="BeginTime",
        demand=t.demand,
        deferred=True,
    )


def _slurm_start(view: ClusterView, job: JobInfo, pin: Sequence[str]) -> tuple[str, ...] | None:
    """Where slurmctld starts a released job: on its pin if it fits there, else the first
    node by Weight (then name) where it believes the job fits, shared cards and all."""
    if pin:
        return view.find(job, require=pin, choose=first_fit)
    for part in job.partition.split(","):
        for fn in view.by_partition.get(part, ()):
            if fn.name in job.excluded_nodes or not fn.ok:
                continue
            if fn.fits(job.demand) or fn.unsafe_for(job.demand):
                return (fn.name,)
    return None


def occupied(
    nodes: Sequence[NodeInfo],
    running: Iterable[JobInfo],
    weights: Mapping[str, int],
    marks: Mapping[str, set[int]] | None = None,
) -> tuple[NodeInfo, ...]:
    """The nodes with what ``running`` jobs hold on them, the weights given and the cards
    slurmctld counts as in use (``marks``; by default those the jobs use)."""
    used: dict[str, list[int]] = {n.name: list(n.card_used or (0,) * n.gpus) for n in nodes}
    cpus = {n.name: n.alloc_cpus for n in nodes}
    mem = {n.name: n.alloc_mem_mb for n in nodes}
    npus: dict[str, dict[str, int]] = {n.name: dict(n.npus_used) for n in nodes}
    for j in running:
        for name in j.nodes:
            cpus[name] += j.demand.cpus
            mem[name] += j.demand.mem_mb
            if j.demand.npus:
                t = j.demand.npu_type or ""
                npus[name][t] = npus[name].get(t, 0) + j.demand.npus
        for c in j.cards:
            used[c.node][c.card] += c.shards
    return tuple(
        replace(
            n,
            card_used=tuple(used[n.name]),
            alloc_cpus=cpus[n.name],
            alloc_mem_mb=mem[n.name],
            npus_used=npus[n.name],
            weight=weights.get(n.name, n.weight),
            slurm_busy=tuple(sorted(marks[n.name])) if marks is not None and n.gpus else None,
        )
        for n in nodes
    )


# ---------------------------------------------------------------------- files
def write_slice(tasks: Sequence[LabTask], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        write_rows(tasks, handle)


def write_rows(tasks: Sequence[LabTask], handle: TextIO) -> None:
    w = csv.writer(handle, lineterminator="\n")
    w.writerow(COLUMNS)
    for t in tasks:
        w.writerow([t.name, t.partition, t.cpus, t.mem_mb, t.gres, t.step, t.leaves])


def load_nodes(path: Path) -> list[NodeInfo]:
    """Nodes as the daemon's snapshot has them, from a JSON list (``dump_nodes``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of nodes")
    return [codec.load(NodeInfo, d) for d in data]


def dump_nodes(nodes: Sequence[NodeInfo], path: Path) -> None:
    path.write_text(json.dumps([codec.dump(n) for n in nodes], indent=1) + "\n", encoding="utf-8")


def load_slice(path: Path) -> list[LabTask]:
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    missing = [c for c in COLUMNS if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: not a lab slice: missing column {', '.join(missing)}")
    return [
        LabTask(
            r["name"],
            r["partition"],
            int(r["cpus"]),
            int(r["mem_mb"]),
            r["gres"],
            int(r["step"]),
            int(r["leaves"]),
        )
        for r in rows
    ]
