"""Resource arithmetic the policies share: what a job asks per node, node lists, features.

Pure helpers over strings Slurm prints; nothing here talks to Slurm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gres.hostlist import expand_hostlist
from gres.model import TEMPLATES
from gres.naming import DEFAULT_SHARDS_PER_GPU

#: Resource names of quotas, usage and fair share: cards (fractions count), cores, GB.
RESOURCES = ("gpu", "npu", "cpu", "mem")

#: vNPU type suffix -> share of the physical card (``910b_vir05`` is a quarter card).
_VNPU_FRACTIONS = {t.suffix: float(t.fraction) for t in TEMPLATES.values()}


def card_fraction(npu_type: str | None) -> float:
    """Share of a physical NPU one device of ``npu_type`` is (1.0 for whole cards)."""
    if npu_type and "_" in npu_type:
        return _VNPU_FRACTIONS.get(npu_type.rsplit("_", 1)[1], 1.0)
    return 1.0


@dataclass(frozen=True, slots=True)
class Amounts:
    """A job's (or tenant's) resources in the units quotas and fair share use."""

    gpu: float = 0.0
    npu: float = 0.0
    cpu: float = 0.0
    mem: float = 0.0  # GB

    def get(self, name: str) -> float:
        return float(getattr(self, name))

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.gpu + other.gpu, self.npu + other.npu, self.cpu + other.cpu, self.mem + other.mem
        )

    def __sub__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.gpu - other.gpu, self.npu - other.npu, self.cpu - other.cpu, self.mem - other.mem
        )

    @property
    def accelerated(self) -> bool:
        return self.gpu > 0 or self.npu > 0


ZERO = Amounts()


@dataclass(frozen=True, slots=True)
class Demand:
    """What a job asks of **each** node it runs on."""

    cpus: int = 1
    mem_mb: int = 0
    gpus: int = 0  # whole cards
    gpu_type: str | None = None
    shards: int = 0  # of one card: Slurm 22.05 takes one job's shards from one card
    npus: int = 0
    npu_type: str | None = None  # may be a vNPU type such as 910b_vir05
    #: computed once: a queue of 100k jobs is counted by demand every cycle
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        fields_ = (
            self.cpus, self.mem_mb, self.gpus, self.gpu_type, self.shards, self.npus, self.npu_type
        )  # fmt: skip
        object.__setattr__(self, "_hash", hash(fields_))

    def __hash__(self) -> int:
        return self._hash

    @property
    def fractional(self) -> bool:
        return self.shards > 0

    def amounts(self, nodes: int, shards_per_gpu: int = DEFAULT_SHARDS_PER_GPU) -> Amounts:
        """Totals over ``nodes`` nodes, shards and vNPUs as fractions of a card."""
        gpu = self.gpus + self.shards / shards_per_gpu
        npu = self.npus * card_fraction(self.npu_type)
        return Amounts(
            gpu * nodes, npu * nodes, float(self.cpus * nodes), self.mem_mb * nodes / 1024
        )


_GRES_ITEM = re.compile(r"^(?:gres[:/])?(?P<name>[a-z]+)(?::(?P<type>[\w.-]+?))?(?::(?P<n>\d+))?$")


def parse_demand(gres: str, *, cpus: int, mem_mb: int) -> Demand:
    """Per-node demand from ``gpu:a100:2``, ``shard:8``, ``gres:npu:910b:1`` (comma list)."""
    gpus = shards = npus = 0
    gpu_type = npu_type = None
    for item in filter(None, (i.strip() for i in gres.split(","))):
        m = _GRES_ITEM.match(item)
        if not m:
            continue
        count = int(m["n"]) if m["n"] else 1
        kind, typ = m["name"], m["type"]
        if typ and typ.isdigit() and not m["n"]:  # ``gpu:2`` parsed as a type
            count, typ = int(typ), None
        if kind == "gpu":
            gpus, gpu_type = count, typ
        elif kind == "shard":
            shards = count
        elif kind == "npu":
            npus, npu_type = count, typ
    return Demand(max(cpus, 1), mem_mb, gpus, gpu_type, shards, npus, npu_type)


# ------------------------------------------------------------------ node lists
def hostlist(names: object) -> str:
    """Canonical list we write to Slurm: sorted, unique, comma-joined.

    Slurm 22.05 keeps ``ExcNodeList``/``ReqNodeList`` exactly as written, so writing one
    canonical form is what makes "already set" comparable.
    """
    if isinstance(names, str):
        names = expand_hostlist(names)
    items = names if isinstance(names, list | tuple | set | frozenset) else ()
    return ",".join(sorted({str(n) for n in items}))


# ------------------------------------------------------------------ features
def features_match(expr: str, features: frozenset[str] | tuple[str, ...]) -> bool:
    """Does a node with ``features`` satisfy ``--constraint`` ``expr``?

    ``&`` binds tighter than ``|``; brackets and ``*count`` suffixes are ignored (they
    concern node counts across a job, which a single-node check cannot judge).
    """
    expr = (expr or "").strip()
    if not expr or expr == "(null)":
        return True
    have = set(features)
    cleaned = re.sub(r"\*\d+", "", expr).replace("[", "").replace("]", "")
    for alternative in cleaned.split("|"):
        wanted = [w.strip() for w in alternative.split("&") if w.strip()]
        if all(w in have for w in wanted):
            return True
    return False
