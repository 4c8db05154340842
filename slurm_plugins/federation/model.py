"""What the cluster picker reasons about: a request, per-cluster snapshots, a decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gres.naming import DEFAULT_SHARDS_PER_GPU
from slurm_plugins.client.job import JobRequest


class Kind(StrEnum):
    GPU = "gpu"  # whole cards
    SHARD = "shard"  # a fraction of one card
    NPU = "npu"
    CPU = "cpu"


@dataclass(frozen=True, slots=True)
class Request:
    """One job as the first level sees it: per node, ``count`` units of ``kind``.

    ``gres_type`` narrows GPUs/NPUs to a model (``a100``); ``data`` is the data set the job
    reads (matched against cluster labels); ``account`` is the Slurm account (tenant).
    """

    kind: Kind
    count: int = 1
    gres_type: str | None = None
    cpus: int = 1
    nodes: int = 1
    account: str | None = None
    data: str | None = None

    def __post_init__(self) -> None:
        if self.count < 1 and self.kind is not Kind.CPU:
            raise ValueError(f"a {self.kind} request needs a count of 1 or more, not {self.count}")
        if self.cpus < 1 or self.nodes < 1:
            raise ValueError("cpus and nodes must be 1 or more")

    def describe(self) -> str:
        what = "cpu only" if self.kind is Kind.CPU else f"{self.kind}"
        if self.gres_type and self.kind is not Kind.CPU:
            what += f":{self.gres_type}"
        if self.kind is not Kind.CPU:
            what += f" x{self.count}"
        return f"{what}, {self.cpus} cpu(s), {self.nodes} node(s)"


@dataclass(frozen=True, slots=True)
class NodeFree:
    """What one schedulable node has free now (and has at all)."""

    name: str
    cpus: int
    gpus: Mapping[str, int] = field(default_factory=dict)  # model -> free whole cards
    shards: Mapping[str, int] = field(default_factory=dict)  # model -> free shards
    npus: Mapping[str, int] = field(default_factory=dict)  # model -> free NPUs
    total_cpus: int = 0
    total_gpus: Mapping[str, int] = field(default_factory=dict)
    total_shards: Mapping[str, int] = field(default_factory=dict)
    total_npus: Mapping[str, int] = field(default_factory=dict)

    def units(self, req: Request, *, total: bool = False) -> int:
        """How many units of the request's kind (and model) this node has free (or at all)."""
        if req.kind is Kind.CPU:
            return self.total_cpus if total else self.cpus
        table = {
            Kind.GPU: self.total_gpus if total else self.gpus,
            Kind.SHARD: self.total_shards if total else self.shards,
            Kind.NPU: self.total_npus if total else self.npus,
        }[req.kind]
        if req.gres_type is None:
            return sum(table.values())
        return table.get(req.gres_type, 0)

    def fits(self, req: Request, *, total: bool = False) -> bool:
        cpus = self.total_cpus if total else self.cpus
        if cpus < req.cpus:
            return False
        return req.kind is Kind.CPU or self.units(req, total=total) >= req.count


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """One cluster at one moment: its free nodes, the accounts it serves, its labels."""

    name: str
    nodes: tuple[NodeFree, ...] = ()
    accounts: frozenset[str] | None = None  # None: unknown (no restriction from Slurm)
    labels: frozenset[str] = frozenset()
    reachable: bool = True
    pending: int = 0  # jobs waiting in its queue

    def free_units(self, req: Request) -> int:
        """Free units of the request's kind on the nodes that could take it now."""
        return sum(n.units(req) for n in self.nodes if n.fits(req))

    def fits_now(self, req: Request) -> bool:
        return sum(1 for n in self.nodes if n.fits(req)) >= req.nodes

    def fits_ever(self, req: Request) -> bool:
        return sum(1 for n in self.nodes if n.fits(req, total=True)) >= req.nodes


@dataclass(frozen=True, slots=True)
class Decision:
    """The chosen cluster, whether the job can start there now, and why each cluster was or
    was not chosen (shown to users and logged)."""

    cluster: str
    starts_now: bool
    reasons: Mapping[str, str]

    def explain(self) -> str:
        return "; ".join(f"{name}: {why}" for name, why in self.reasons.items())


class NoClusterFits(ValueError):
    """No cluster may or can ever run the request; ``reasons`` says why, per cluster."""

    def __init__(self, req: Request, reasons: Mapping[str, str]) -> None:
        self.reasons = dict(reasons)
        detail = "; ".join(f"{k}: {v}" for k, v in self.reasons.items()) or "no clusters known"
        super().__init__(f"no cluster can run {req.describe()}: {detail}")


def request_for(
    *,
    gpus: float = 0,
    gpu_type: str | None = None,
    npus: int = 0,
    npu_type: str | None = None,
    cpus: int | None = None,
    nodes: int = 1,
    account: str | None = None,
    data: str | None = None,
    shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU,
) -> Request:
    """The request of a job asking, per node, for ``gpus`` cards (a share that is not whole
    cards, ``0.25`` or ``1.25``, means shards), or ``npus`` NPUs, or only CPUs."""
    if gpus and not float(gpus).is_integer():
        shards = round(gpus * shards_per_gpu)
        return Request(Kind.SHARD, max(1, shards), gpu_type, cpus or 1, nodes, account, data)
    if gpus:
        return Request(Kind.GPU, int(gpus), gpu_type, cpus or 1, nodes, account, data)
    if npus:
        return Request(Kind.NPU, npus, npu_type, cpus or 1, nodes, account, data)
    return Request(Kind.CPU, 0, None, cpus or 1, nodes, account, data)


def request_of(job: JobRequest, *, data: str | None = None) -> Request:
    """The request of a job as every way into a job writes it (:class:`JobRequest`): its
    first component's account, nodes, CPUs per node (its tasks' on one node) and card ask;
    ``data`` is the data set it reads."""
    c = job.components[0]
    cpus = (c.cpus_per_task or 1) * (c.tasks_per_node or 1)
    asks = {g.name: g for g in c.gres}
    if gpu := asks.get("gpu"):
        return Request(Kind.GPU, gpu.count, gpu.type, cpus, c.node_count, c.account, data)
    if shard := asks.get("shard"):
        return Request(Kind.SHARD, shard.count, shard.type, cpus, c.node_count, c.account, data)
    if npu := asks.get("npu"):
        return Request(Kind.NPU, npu.count, npu.type, cpus, c.node_count, c.account, data)
    return Request(Kind.CPU, 0, None, cpus, c.node_count, c.account, data)
