"""Cards, shards, NPUs, vNPUs, CPUs and memory of nodes: used, free and total, counted once.

Every page and API answer that reports capacity counts it here, from the client's
:class:`~slurm_plugins.client.models.Node` (pure functions, no Slurm call):

- a whole GPU or NPU is one **card**; a **shard** is ``1/n`` of its card (``n`` the node's
  shards per card, 32 in the lab), so 8 shards in use are 0.25 card used; a **vNPU** is its
  template's share of its NPU (``910b_vir05`` = 1/4, ``910b_vir10`` = 1/2, from
  :data:`gres.model.TEMPLATES`);
- **used** is what jobs hold now; **free** is what new work could still get, on nodes that
  take new work (a drained, down or failing node has nothing free); **total** is everything
  configured, so ``total = used + free + unavailable``;
- **whole cards free** are cards nothing runs on (no whole-card job, no shard, no vNPU): what a
  whole-card job can have now. A card with shards in use is not free as a whole card.

Slurm's own figures disagree with these and are not shown raw: ``gres/npu`` counts a vNPU as
one NPU, and 22.05's ``GresUsed`` counts a card with shards in use once, however many of its
shards are taken (``shard:a100:1(IDX:0)``); the allocated TRES (``gres/shard=8``) give the
shards, the ``IDX`` lists which cards are touched.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from gres.hostlist import expand_hostlist
from gres.model import TEMPLATES
from gres.naming import ACCEL_KINDS, DEFAULT_SHARDS_PER_GPU
from slurm_plugins.client.models import Gres, Node, Tres

GPU, NPU, CPU = "gpu", "npu", "cpu"
SHARD = "shard"
#: vNPU type suffix -> its share of the physical NPU (``vir05`` -> 1/4)
VNPU_SHARES: Mapping[str, Fraction] = {t.suffix: t.fraction for t in TEMPLATES.values()}


@dataclass(frozen=True, slots=True)
class Amount:
    """Used, free and total of one resource (cards may be fractions)."""

    total: Fraction = Fraction(0)
    used: Fraction = Fraction(0)
    free: Fraction = Fraction(0)

    @classmethod
    def of(cls, total: Fraction | int, used: Fraction | int, *, up: bool) -> Amount:
        """``free`` is what is left of ``total`` on a node that takes new work, else none."""
        total, used = Fraction(total), Fraction(used)
        return cls(total, used, max(Fraction(0), total - used) if up else Fraction(0))

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.total + other.total, self.used + other.used, self.free + other.free)

    @property
    def unavailable(self) -> Fraction:
        """Neither used nor free: on nodes that take no new work, or (shards) on cards that
        whole-card jobs hold."""
        return max(Fraction(0), self.total - self.used - self.free)

    @property
    def ratio(self) -> float | None:
        """Share in use (0…1); ``None`` when there is none of it."""
        return float(self.used / self.total) if self.total else None


@dataclass(frozen=True, slots=True)
class Slice:
    """Parts of cards handed out one by one: GPU shards, or vNPUs of one template."""

    type: str  # "shard", or the vNPU's Slurm type ("910b_vir05")
    share: Fraction  # of one card
    units: Amount  # counted in slices, not cards


@dataclass(frozen=True, slots=True)
class Cards:
    """One kind of card (``gpu`` or ``npu``) of one model (``""``: all models of the kind)."""

    kind: str
    model: str
    cards: Amount  # in cards, slices as their share
    whole_free: int = 0
    slices: tuple[Slice, ...] = ()

    def slice(self, type_: str) -> Slice | None:
        return next((s for s in self.slices if s.type == type_), None)

    @property
    def shards(self) -> Amount:
        """GPU shards (every shard size together); none for NPUs."""
        return sum((s.units for s in self.slices if s.type == SHARD), Amount())

    @property
    def vnpus(self) -> Amount:
        """vNPUs of every template, counted one by one."""
        return sum((s.units for s in self.slices if s.type != SHARD), Amount())


@dataclass(frozen=True, slots=True)
class Capacity:
    """Cards per kind and model, CPUs and memory (MiB) of one node or a set of nodes."""

    nodes: int = 0
    cards: tuple[Cards, ...] = ()
    cpus: Amount = field(default_factory=Amount)
    memory_mb: Amount = field(default_factory=Amount)

    def kind(self, kind: str) -> Cards:
        """Every model of ``kind`` together (model ``""``)."""
        return _merge([c for c in self.cards if c.kind == kind], kind, "")

    @property
    def gpus(self) -> Cards:
        return self.kind(GPU)

    @property
    def npus(self) -> Cards:
        return self.kind(NPU)


def _indexes(text: str) -> frozenset[int] | None:
    """Device indexes of a ``GresUsed`` entry (``0-1,3``); ``None`` when Slurm gave none."""
    if text in ("N/A", "(null)"):
        return frozenset()
    if not text:
        return None
    try:
        return frozenset(int(i) for i in expand_hostlist(f"[{text}]"))
    except ValueError:
        return None


def _used(node: Node, name: str, model: str, *, only: bool) -> int:
    """Allocated count of one GRES type: the allocated TRES, typed, else untyped when it is
    the node's only type of that name, else ``GresUsed`` (which counts cards for shards)."""
    tres = node.tres_used.counts
    if model and f"gres/{name}:{model}" in tres:
        return tres[f"gres/{name}:{model}"]
    if only and f"gres/{name}" in tres:
        return tres[f"gres/{name}"]
    return sum(g.count for g in node.gres_used if g.name == name and (g.type or "") == model)


def _used_indexes(node: Node, name: str, model: str) -> frozenset[int] | None:
    entries = [g for g in node.gres_used if g.name == name and (g.type or "") == model]
    found: set[int] = set()
    for g in entries:
        idx = _indexes(g.indexes)
        if idx is None:
            return None if g.count else frozenset(found)
        found |= idx
    return frozenset(found)


def _configured(gres: Iterable[Gres], name: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for g in gres:
        if g.name == name and g.count:
            out[g.type or ""] += g.count
    return dict(out)


def _gpus(node: Node, up: bool) -> list[Cards]:
    models = _configured(node.gres, GPU)
    shards = _configured(node.gres, SHARD)
    out = []
    for model, count in sorted(models.items()):
        only = len(models) == 1
        total_shards = shards.get(model, 0) or (sum(shards.values()) if only else 0)
        per_card = total_shards // count if total_shards else 0
        whole = min(count, _used(node, GPU, model, only=only))
        used_shards = _used(node, SHARD, model, only=only) if per_card else 0
        touched_whole = _used_indexes(node, GPU, model)
        touched_shards = _used_indexes(node, SHARD, model) if per_card else frozenset()
        if touched_whole is not None and touched_shards is not None:
            busy = len(touched_whole | touched_shards)
        else:
            busy = whole + (math.ceil(used_shards / per_card) if per_card else 0)
        used = whole + (Fraction(used_shards, per_card) if per_card else 0)
        slices: tuple[Slice, ...] = ()
        if per_card:
            left = total_shards - used_shards - per_card * whole
            units = Amount(
                Fraction(total_shards),
                Fraction(used_shards),
                Fraction(max(0, left)) if up else Fraction(0),
            )
            slices = (Slice(SHARD, Fraction(1, per_card), units),)
        out.append(
            Cards(
                GPU,
                model,
                Amount.of(count, min(Fraction(count), used), up=up),
                max(0, count - busy) if up else 0,
                slices,
            )
        )
    return out


def npu_share(type_: str) -> tuple[str, Fraction]:
    """``910b_vir05`` -> (``910b``, 1/4); a physical NPU type -> (itself, 1)."""
    model, sep, suffix = type_.rpartition("_")
    if sep and model and suffix in VNPU_SHARES:
        return model, VNPU_SHARES[suffix]
    return type_, Fraction(1)


def _npus(node: Node, up: bool) -> list[Cards]:
    types = _configured(node.gres, NPU)
    by_model: dict[str, list[tuple[str, Fraction, int, int]]] = defaultdict(list)
    for type_, count in types.items():
        model, share = npu_share(type_)
        used = min(count, _used(node, NPU, type_, only=len(types) == 1))
        by_model[model].append((type_, share, count, used))
    out = []
    for model, entries in sorted(by_model.items()):
        cards = sum((Amount.of(c * s, u * s, up=up) for _, s, c, u in entries), Amount())
        whole_free = sum(c - u for _, s, c, u in entries if s == 1) if up else 0
        slices = tuple(
            Slice(t, s, Amount.of(c, u, up=up)) for t, s, c, u in sorted(entries) if s != 1
        )
        out.append(Cards(NPU, model, cards, whole_free, slices))
    return out


def node_capacity(node: Node) -> Capacity:
    """One node's cards by kind and model, CPUs and memory."""
    up = node.available
    return Capacity(
        nodes=1,
        cards=(*_gpus(node, up), *_npus(node, up)),
        cpus=Amount.of(node.cpus, min(node.alloc_cpus, node.cpus), up=up),
        memory_mb=Amount.of(node.real_memory, min(node.alloc_memory, node.real_memory), up=up),
    )


def _merge(cards: Iterable[Cards], kind: str, model: str) -> Cards:
    amount, whole = Amount(), 0
    slices: dict[tuple[str, Fraction], Amount] = {}
    for c in cards:
        amount, whole = amount + c.cards, whole + c.whole_free
        for s in c.slices:
            slices[(s.type, s.share)] = slices.get((s.type, s.share), Amount()) + s.units
    ordered = tuple(Slice(t, share, u) for (t, share), u in sorted(slices.items()))
    return Cards(kind, model, amount, whole, ordered)


def total(capacities: Iterable[Capacity]) -> Capacity:
    """The sum of nodes' (or sets of nodes') capacities."""
    count, cpus, memory = 0, Amount(), Amount()
    grouped: dict[tuple[str, str], list[Cards]] = defaultdict(list)
    for c in capacities:
        count, cpus, memory = count + c.nodes, cpus + c.cpus, memory + c.memory_mb
        for cards in c.cards:
            grouped[(cards.kind, cards.model)].append(cards)
    merged = tuple(_merge(v, kind, model) for (kind, model), v in sorted(grouped.items()))
    return Capacity(count, merged, cpus, memory)


def of_nodes(nodes: Iterable[Node]) -> Capacity:
    """The capacity of a set of nodes (a cluster, the pool)."""
    return total(node_capacity(n) for n in nodes)


def by_partition(
    nodes: Iterable[Node], capacities: Iterable[Capacity] | None = None
) -> dict[str, Capacity]:
    """Each partition's capacity; a node in several partitions counts in each of them.
    ``capacities``, where the caller has them, are the nodes' own, in the same order (not
    computed again)."""
    nodes = list(nodes)
    caps = list(capacities) if capacities is not None else [node_capacity(n) for n in nodes]
    parts: dict[str, list[Capacity]] = defaultdict(list)
    for n, cap in zip(nodes, caps, strict=True):
        for p in n.partitions:
            parts[p].append(cap)
    return {p: total(c) for p, c in sorted(parts.items())}


def shards_per_card(node: Node | None) -> int:
    """Shards one card of ``node`` is cut into (the site's default without a node)."""
    if node is not None:
        cards = sum(_configured(node.gres, GPU).values())
        shards = sum(_configured(node.gres, SHARD).values())
        if cards and shards:
            return shards // cards
    return DEFAULT_SHARDS_PER_GPU


@dataclass(frozen=True, slots=True)
class Held:
    """Devices a job asks for or holds, of one GRES type: ``count`` of them, each ``share``
    of a card (1 for whole cards), ``cards`` in all."""

    kind: str  # gpu, shard, npu, vnpu, mlu, dcu or xpu
    type: str  # the GRES type (a100, 910b_vir05), "" when Slurm names none
    count: int
    share: Fraction

    @property
    def cards(self) -> Fraction:
        return self.count * self.share


def held(tres: Tres, per_card: int = DEFAULT_SHARDS_PER_GPU) -> tuple[Held, ...]:
    """A job's GRES in card terms: whole GPUs, shards (``1/per_card`` each), whole NPUs and
    vNPUs; typed where Slurm says the type."""
    out: list[Held] = []
    gpus = tres.typed(GPU)
    out += [Held(GPU, t, n, Fraction(1)) for t, n in sorted(gpus.items()) if n]
    if tres.gpus > sum(gpus.values()):
        out.append(Held(GPU, "", tres.gpus - sum(gpus.values()), Fraction(1)))
    if tres.shards:
        out.append(Held(SHARD, "", tres.shards, Fraction(1, per_card or DEFAULT_SHARDS_PER_GPU)))
    npus = tres.typed(NPU)
    for t, n in sorted(npus.items()):
        if n:
            _, share = npu_share(t)
            out.append(Held(NPU if share == 1 else "vnpu", t, n, share))
    if tres.npus > sum(npus.values()):
        out.append(Held(NPU, "", tres.npus - sum(npus.values()), Fraction(1)))
    for kind in ACCEL_KINDS:  # MLU, DCU, XPU: whole cards
        typed = tres.typed(kind)
        out += [Held(kind, t, n, Fraction(1)) for t, n in sorted(typed.items()) if n]
        if tres[f"gres/{kind}"] > sum(typed.values()):
            out.append(Held(kind, "", tres[f"gres/{kind}"] - sum(typed.values()), Fraction(1)))
    return tuple(out)
