"""``placement``: fragmentation-aware placement, steering Slurm where it cannot be told.

The scorers are :mod:`gres.placement`'s (``best-fit``, ``fgd``, ``aipool`` …), the same the
simulator measures. Two levers on Slurm 22.05:

* **pending fractional jobs** (shards of a card) among the first ``lookahead`` in the
  queue are pinned (``ReqNodeList``) to the node the scorer picks among those where they
  fit now; a pin is renewed each cycle, so a job whose node filled up moves on. A job with
  its own node list is never re-pinned.
* **node ``Weight``**: slurmctld tries lower weights first, so GPU nodes are weighted by how
  full they are (fuller first, in ``levels`` steps) and whole-card and CPU work packs onto
  busy nodes, leaving others whole. Steps keep weights from changing every cycle.

Slurm still picks the card inside the node (the lowest one with room); the scorer used
for the pin is told so (``aipool`` scores that very card).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.placement import MILLI, SCORERS, NodeView, Request, Workload, decide
from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, register
from slurm_plugins.policy.cluster import FreeNode
from slurm_plugins.policy.plan import NodeWeight
from slurm_plugins.policy.snapshot import JobInfo


def _scorer(name: str) -> None:
    if name not in SCORERS:
        raise ValidationError(f"unknown scorer {name!r}; known: {', '.join(sorted(SCORERS))}")


class PlacementArgs(Schema):
    scorer = fields.String(load_default="aipool", validate=_scorer)
    pin_fractional = fields.Boolean(load_default=True)
    lookahead = fields.Integer(load_default=50, validate=validate.Range(min=0))
    #: Nodes the scorer looks at per job: the tightest fits first (bounds a cycle's cost).
    max_candidates = fields.Integer(load_default=48, validate=validate.Range(min=1))
    node_weights = fields.Boolean(load_default=True)
    levels = fields.Integer(load_default=10, validate=validate.Range(2, 1000))
    base_weight = fields.Integer(load_default=1, validate=validate.Range(min=1))


def request_of(job: JobInfo, spg: int) -> Request:
    d = job.demand
    gpu_milli, gpu_count = 0, 0
    if d.shards:
        gpu_milli, gpu_count = min(MILLI, d.shards * MILLI // spg), 1
    elif d.gpus:
        gpu_milli, gpu_count = MILLI, d.gpus
    models = (d.gpu_type,) if d.gpu_type else ()
    return Request(d.cpus * 1000, d.mem_mb, gpu_milli, gpu_count, models)


def view_of(fn: FreeNode) -> NodeView:
    spg = fn.spg
    return NodeView(
        fn.name,
        fn.info.gpu_type or "",
        fn.cpus * 1000,
        fn.mem_mb,
        tuple(f * MILLI // spg for f in fn.card_free),
        fn.info.cpus * 1000,
        fn.info.mem_mb,
    )


@register
class Placement(Policy):
    name = "placement"
    Args = PlacementArgs
    stage = 10  # after the policies that add exclusions

    def __init__(
        self,
        *,
        scorer: str = "aipool",
        pin_fractional: bool = True,
        lookahead: int = 50,
        node_weights: bool = True,
        levels: int = 10,
        base_weight: int = 1,
        max_candidates: int = 48,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.scorer = SCORERS[scorer]
        self.pin = pin_fractional
        self.lookahead = lookahead
        self.weights = node_weights
        self.levels = levels
        self.base_weight = base_weight
        self.max_candidates = max_candidates
        self._views: dict[str, tuple[int, NodeView]] = {}
        self._views_for: Cycle | None = None
        self._workload: tuple[Context, Workload] | None = None

    def workload(self, ctx: Context) -> Workload:
        """The shapes FGD measures fragmentation against: this cluster's GPU work now."""
        if self._workload is not None and self._workload[0] is ctx:
            return self._workload[1]
        reqs = [
            request_of(j, DEFAULT_SHARDS_PER_GPU)
            for j in ctx.snapshot.jobs
            if j.demand.gpus or j.demand.shards
        ]
        wl = Workload.from_requests(reqs) if reqs else Workload(())
        self._workload = (ctx, wl)
        return wl

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        if not (self.pin and job.demand.fractional and job.node_count == 1):
            return None
        if job.required_nodes and job.job_id not in ctx.state.base_req:
            return None  # the user's own node list
        done = cycle.memo.setdefault("placement.pinned", 0)
        if done >= self.lookahead or "BeginTime" in job.reason or "Dependency" in job.reason:
            return None
        cycle.memo["placement.pinned"] = done + 1
        if self._views_for is not cycle:  # node views are cached within one cycle only
            self._views, self._views_for = {}, cycle
        exclude = cycle.exclude.get(job.job_id, frozenset())
        cands = cycle.view.candidates(replace_required(job), exclude=exclude)
        if not cands:
            return None
        pinned = set(job.required_nodes) if job.job_id in ctx.state.base_req else set()
        kept = [c for c in cands if c.name in pinned]
        if kept:  # our pin still fits: keep it rather than chase small score changes
            return Verdict(reason=f"placement: {kept[0].name} (kept)", pin=(kept[0].name,))
        views = [self._view(c) for c in _tightest(cands, job, self.max_candidates)]
        spg = cands[0].spg
        d = decide(request_of(job, spg), views, self.scorer, self.workload(ctx))
        if d is None:
            return None
        return Verdict(reason=f"placement: {d.node} ({d.reason})", pin=(d.node,))

    def _view(self, fn: FreeNode) -> NodeView:
        cached = self._views.get(fn.name)
        if cached is None or cached[0] != fn.version:
            cached = (fn.version, view_of(fn))
            self._views[fn.name] = cached
        return cached[1]

    def nodes(self, ctx: Context, cycle: Cycle) -> Iterable[NodeWeight]:
        if not self.weights:
            return []
        out = []
        sel = set(ctx.select.partitions)
        for n in ctx.snapshot.nodes:
            if not n.gpus or (sel and not sel & set(n.partitions)):
                continue
            used = sum(min(u, n.shards_per_gpu) for u in n.card_used) / (n.gpus * n.shards_per_gpu)
            w = fullness_weight(used, self.levels, self.base_weight)
            out.append(
                NodeWeight(
                    n.name, w, f"placement: {used:.0%} of its cards in use, fuller nodes first"
                )
            )
        return out


def fullness_weight(used: float, levels: int = 10, base: int = 1) -> int:
    """Node ``Weight`` for a GPU node with ``used`` (0..1) of its cards taken: fuller nodes
    get lower weights, which slurmctld tries first; ``levels`` steps keep it from flapping."""
    return base + round((1.0 - used) * (levels - 1))


def _tightest(cands: Sequence[FreeNode], job: JobInfo, k: int) -> list[FreeNode]:
    """The ``k`` nodes whose best card leaves the least room after the job (then by name)."""
    if len(cands) <= k:
        return list(cands)
    need = job.demand.shards

    def slack(fn: FreeNode) -> tuple[int, int, str]:
        left = min((f - need for f in fn.card_free if f >= need), default=fn.spg)
        return left, sum(fn.card_free), fn.name

    return sorted(cands, key=slack)[:k]


def replace_required(job: JobInfo) -> JobInfo:
    """The job without the pin we set last cycle, so a full node can be swapped for another."""
    if not job.required_nodes:
        return job
    from dataclasses import replace

    return replace(job, required_nodes=())


__all__: Sequence[str] = ("Placement", "fullness_weight", "request_of", "view_of")
