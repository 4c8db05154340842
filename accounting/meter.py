"""Metering (pure): what a job used, in cards, CPUs and memory, and to whom it is attributed.

A whole GPU or NPU counts as one card; a shard counts as its fraction of the card it sits on
(``1/shards_per_gpu``, 1/32 in the lab, so 8 shards for 2 h are 0.5 card-hours); a vNPU counts as
its template's share of the physical NPU (``910b_vir05`` = 1/4 of a ``910b``). GPUs and NPUs are
metered separately, each with its model. Cambricon MLUs, Hygon DCUs and Kunlunxin XPUs are
whole cards metered with the NPUs, as the pool's non-NVIDIA accelerator cards, their type
written ``<kind>:<model>`` (``mlu:mlu370``) so that card-hours split by kind (:func:`card_kind`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from gres.hostlist import first_host
from gres.model import TEMPLATES
from gres.naming import ACCEL_KINDS, DEFAULT_SHARDS_PER_GPU
from slurm_plugins.client.models import AcctJob, Association, Node, Tres

#: micro-cards in one card
UCARDS = 1_000_000
_VNPU_UCARDS = {t.suffix: round(t.fraction * UCARDS) for t in TEMPLATES.values()}


@dataclass(frozen=True, slots=True)
class NodeCards:
    """What a node's shards are a fraction of: its GPU model and shards per card."""

    gpu_type: str = ""
    shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU


@dataclass(frozen=True, slots=True)
class Topology:
    """Cluster facts the metering needs, read once per import."""

    nodes: Mapping[str, NodeCards] = field(default_factory=dict)
    #: account -> its domain (the account's top ancestor below ``root``)
    domains: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_slurm(cls, nodes: Iterable[Node], assocs: Iterable[Association]) -> Topology:
        cards = {}
        for n in nodes:
            gpus = [g for g in n.gres if g.name == "gpu"]
            shards = sum(g.count for g in n.gres if g.name == "shard")
            count = sum(g.count for g in gpus)
            per = shards // count if count and shards else DEFAULT_SHARDS_PER_GPU
            cards[n.name] = NodeCards(gpus[0].type or "" if gpus else "", per)
        parents = {a.account: a.parent for a in assocs if not a.user and a.parent}
        return cls(cards, {acct: _top(acct, parents) for acct in parents})

    def domain_of(self, account: str) -> str:
        return self.domains.get(account, account)

    def node(self, nodelist: str) -> NodeCards:
        return self.nodes.get(first_host(nodelist), NodeCards())


def _top(account: str, parents: Mapping[str, str]) -> str:
    seen = {account}
    while parents.get(account, "root") != "root":
        account = parents[account]
        if account in seen:  # a cycle would be Slurm's bug; stop rather than loop
            break
        seen.add(account)
    return account


@dataclass(frozen=True, slots=True)
class Usage:
    """One metered job: attribution, times and the cards, CPUs and memory it held.

    Times are epoch seconds (UTC): a usage is compared, split into hours and sent between
    processes by the million, and plain integers make all three cheap.
    """

    cluster: str
    job_id: int
    step: str
    user: str
    account: str
    domain: str
    partition: str
    qos: str
    state: str
    submit_time: int | None
    start_time: int
    end_time: int
    elapsed_s: int
    wait_s: int
    gpu_type: str
    gpu_ucards: int
    npu_type: str
    npu_ucards: int
    cpus: int
    mem_mib: int
    finished: bool

    @property
    def gpu_ucs(self) -> int:
        return self.gpu_ucards * self.elapsed_s

    @property
    def npu_ucs(self) -> int:
        return self.npu_ucards * self.elapsed_s

    @property
    def cpu_s(self) -> int:
        return self.cpus * self.elapsed_s

    @property
    def mem_mib_s(self) -> int:
        return self.mem_mib * self.elapsed_s


def gpu_cards(tres: Tres, node: NodeCards) -> tuple[str, int]:
    """GPU model and micro-cards held: whole GPUs plus shards as fractions of the node's
    cards (integer arithmetic, rounded to the nearest micro-card)."""
    typed = tres.typed("gpu")
    model = max(typed, key=lambda t: (typed[t], t)) if typed else node.gpu_type
    ucards = tres.gpus * UCARDS
    shards = tres.shards
    if shards:
        per = node.shards_per_gpu or 1
        ucards += (2 * shards * UCARDS + per) // (2 * per)
    return (model if ucards else ""), ucards


def npu_cards(tres: Tres) -> tuple[str, int]:
    """NPU model and micro-cards held; a vNPU (``910b_vir05``) counts as its share of the
    chip."""
    total = tres.npus
    if not total:
        return "", 0
    by_model: dict[str, int] = {}
    typed_count = 0
    for typ, count in tres.typed("npu").items():
        model, _, suffix = typ.rpartition("_")
        share = _VNPU_UCARDS.get(suffix) if model else None
        if share is None:
            model, share = typ, UCARDS
        by_model[model] = by_model.get(model, 0) + share * count
        typed_count += count
    ucards = sum(by_model.values()) + max(total - typed_count, 0) * UCARDS
    model = max(by_model, key=lambda m: (by_model[m], m)) if by_model else ""
    return (model if ucards else ""), ucards


def accel_cards(tres: Tres) -> tuple[str, int]:
    """MLU, DCU and XPU cards held, as micro-cards, and the type most of them have
    (``<kind>:<model>``, or the kind alone when Slurm recorded no type)."""
    by_type: dict[str, int] = {}
    for kind in ACCEL_KINDS:
        total = tres[f"gres/{kind}"]
        typed = tres.typed(kind)
        for model, count in typed.items():
            by_type[f"{kind}:{model}"] = by_type.get(f"{kind}:{model}", 0) + count * UCARDS
        untyped = max(total - sum(typed.values()), 0)
        if untyped:
            by_type[kind] = by_type.get(kind, 0) + untyped * UCARDS
    if not by_type:
        return "", 0
    return max(by_type, key=lambda t: (by_type[t], t)), sum(by_type.values())


def card_kind(resource: str, model: str) -> str:
    """The kind of card a metered type is: ``gpu``, ``npu``, or the MLU/DCU/XPU kind its
    type names (``mlu:mlu370`` → ``mlu``)."""
    kind = model.partition(":")[0]
    return kind if resource == "npu" and kind in ACCEL_KINDS else resource


def epoch(t: datetime) -> int:
    """Whole epoch seconds of an aware datetime (sacct's times have no fractions)."""
    return int(t.timestamp())


def meter(job: AcctJob, topo: Topology, now: datetime | None = None) -> Usage | None:
    """The usage of one ``sacct`` record; ``None`` for a job that never started."""
    if job.start_time is None:
        return None
    start = epoch(job.start_time)
    elapsed = max(job.elapsed_s, 0)
    finished = job.state.is_finished
    end = epoch(job.end_time) if finished and job.end_time is not None else start + elapsed
    if now is not None and not finished:
        end = min(max(end, start), epoch(now))
    submit = epoch(job.submit_time) if job.submit_time else None
    wait = max(start - submit, 0) if submit is not None else 0
    tres = job.tres_alloc
    counts = tres.counts
    if counts.get("gres/gpu") or counts.get("gres/shard"):
        gpu_type, gpus = gpu_cards(tres, topo.node(job.nodes))
    else:
        gpu_type, gpus = "", 0
    npu_type, npus = npu_cards(tres)
    accel_type, accels = accel_cards(tres)
    npu_type, npus = (npu_type or accel_type), npus + accels
    return Usage(
        cluster=job.cluster,
        job_id=job.job_id,
        step="",
        user=job.user,
        account=job.account,
        domain=topo.domain_of(job.account),
        partition=job.partition,
        qos=job.qos,
        state=job.state.value,
        submit_time=submit,
        start_time=start,
        end_time=end,
        elapsed_s=elapsed,
        wait_s=wait,
        gpu_type=gpu_type,
        gpu_ucards=gpus,
        npu_type=npu_type,
        npu_ucards=npus,
        cpus=counts.get("cpu", 0),
        mem_mib=counts.get("mem", 0),
        finished=finished,
    )
