"""``placement``: the scorer decides where jobs run, before Slurm may start them.

The scorers are :mod:`gres.placement`'s (``best-fit``, ``fgd``, ``aipool`` …), the same the
simulator measures, and the choice is :mod:`slurm_plugins.policy.placing`'s: the best of all
nodes that fit now, equal scores to the lowest name, scored against the daemon's task model
(every shape queued, running and recently ended). Levers on Slurm 22.05:

* **deferred jobs**: while the daemon's heartbeat is fresh the admission hook gives every GPU
  and NPU job (CPU jobs on those partitions too) a begin time a few seconds ahead; each cycle
  the policy pins every such job (``ReqNodeList``: whole cards, shards, several cards or
  nodes, NPUs and vNPUs alike) and the engine starts it (``StartTime=now``) in the same
  update. A job that fits nowhere now is started unpinned: it queues as usual.
* **pending jobs** it pinned earlier keep their pin while it still fits; one that stopped
  fitting is pinned anew, or handed back to Slurm (its own node list) when nothing fits.
  Work that waits in the queue for room is Slurm's to place when room frees (by ``Weight``,
  below); ``lookahead`` > 0 also pins the first N other pending jobs that fit now.
* **node ``Weight``**: slurmctld tries lower weights first, so GPU nodes are weighted by how
  full they are (fuller first, in ``levels`` steps): what Slurm places by itself (work that
  waited in the queue, or all of it while the daemon is down) packs onto busy nodes.

Slurm still picks the card inside the node (the lowest one with room); ``aipool`` scores that
very card. A job with its own node list is never pinned (but its wait is ended all the same).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

from marshmallow import Schema, ValidationError, fields, validate

from gres.placement import SCORERS, Workload
from gres.placement_tasks import settled
from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, hold, register
from slurm_plugins.policy.placing import Placing, ScoreStore, kind_of, task_counts
from slurm_plugins.policy.plan import NodeWeight
from slurm_plugins.policy.snapshot import JobInfo


def _scorer(name: str) -> None:
    if name not in SCORERS:
        raise ValidationError(f"unknown scorer {name!r}; known: {', '.join(sorted(SCORERS))}")
    if SCORERS[name].random_ties:
        raise ValidationError(f"scorer {name!r} breaks ties at random; pick one that does not")


class PlacementArgs(Schema):
    scorer = fields.String(load_default="aipool", validate=_scorer)
    #: Other pending jobs pinned per cycle when they fit now (0: none; Slurm places queued
    #: work by node Weight when room frees, which the simulator's live rules model; a daemon
    #: that pins them races slurmctld's scheduler for them).
    lookahead = fields.Integer(load_default=0, validate=validate.Range(min=0))
    #: Deferred jobs pinned per cycle; the rest wait for the next cycle (straight after).
    max_pins = fields.Integer(load_default=5000, validate=validate.Range(min=1))
    #: Count the shapes of work that ended within the usage window in the task model.
    history = fields.Boolean(load_default=True)
    node_weights = fields.Boolean(load_default=True)
    levels = fields.Integer(load_default=10, validate=validate.Range(2, 1000))
    base_weight = fields.Integer(load_default=1, validate=validate.Range(min=1))


@register
class Placement(Policy):
    name = "placement"
    Args = PlacementArgs
    stage = 10  # after the policies that add exclusions

    def __init__(
        self,
        *,
        scorer: str = "aipool",
        lookahead: int = 0,
        max_pins: int = 5000,
        history: bool = True,
        node_weights: bool = True,
        levels: int = 10,
        base_weight: int = 1,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.scorer = SCORERS[scorer]
        self.lookahead = lookahead
        self.max_pins = max_pins
        self.history = history
        self.weights = node_weights
        self.levels = levels
        self.base_weight = base_weight
        #: scores of node shapes, reused by the next cycles (they do not change a decision)
        self.scores = ScoreStore()

    def models(self, ctx: Context) -> dict[str, Workload]:
        """The task model per family of cards: every job the daemon sees, and what ended;
        the one it used before while the mix has not moved beyond the tolerance."""
        usage = ctx.snapshot.usage if self.history else ()
        counted = task_counts(ctx.snapshot.jobs, usage, self.kinds(ctx))
        kept = ctx.state.task_models
        return {f: settled(kept.get(f), c.model()) for f, c in counted.items()}

    def kinds(self, ctx: Context) -> dict[str, str]:
        by_part: dict[str, list[Any]] = {}
        for n in ctx.snapshot.nodes:
            for p in n.partitions:
                by_part.setdefault(p, []).append(n)
        return {p: kind_of(nodes) for p, nodes in by_part.items()}

    def _placing(self, ctx: Context, cycle: Cycle) -> Placing:
        found = cycle.memo.get("placement.placing")
        if found is None:
            models = self.models(ctx)
            cycle.task_models.update(models)
            found = Placing(self.scorer, cycle.view, models, self.kinds(ctx), self.scores)
            cycle.memo["placement.placing"] = found
        return cast(Placing, found)

    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        verdict = self._admit(job, ctx, cycle)
        if job.demand.gpus and (verdict is None or not verdict.pin):
            # Slurm 22.05 may give a card that still holds shards to a whole-card job it
            # places itself: keep such work off those nodes until they are right again
            unsafe = self._placing(ctx, cycle).unsafe(job) - set(job.required_nodes)
            if unsafe:
                why = (
                    f"placement: not on {','.join(sorted(unsafe))} (a card there still has shards)"
                )
                return Verdict(reason=why, exclude=unsafe)
        return verdict

    def _admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        ours = job.job_id in ctx.state.base_req
        if job.required_nodes and not ours:
            return None  # the user's own node list
        if job.not_yet:
            return None
        if job.deferred:
            budget = "placement.pins"
            if cycle.memo.get(budget, 0) >= self.max_pins:
                return None
            cycle.memo[budget] = cycle.memo.get(budget, 0) + 1
        elif not ours:
            done = cycle.memo.get("placement.looked", 0)
            if done >= self.lookahead:
                return None
            cycle.memo["placement.looked"] = done + 1
        exclude = cycle.exclude.get(job.job_id, frozenset())
        if ours:
            kept = self._kept(job, cycle, exclude)
            if kept is not None:
                return kept
        chosen = self._placing(ctx, cycle).choose(_unpinned(job), exclude=exclude)
        if chosen is None:
            if job.deferred and _share_slurm_would_split(job, ctx):
                return hold(
                    "placement: waits for one card with room for its share (Slurm would "
                    "split it over several cards)"
                )
            return None  # fits nowhere now: no pin (a pin of ours is handed back)
        nodes = tuple(d.node for d in chosen)
        why = f"placement: {','.join(nodes)} ({chosen[0].reason})"
        return Verdict(reason=why, pin=nodes)

    def _kept(self, job: JobInfo, cycle: Cycle, exclude: frozenset[str]) -> Verdict | None:
        """Our pin, while the job still fits there: kept rather than chasing small gains."""
        pinned = job.required_nodes
        view = cycle.view
        ok = all(
            (fn := view.nodes.get(n)) is not None and fn.ok and fn.fits(job.demand) for n in pinned
        )
        if ok and pinned and not set(pinned) & exclude:
            return Verdict(reason=f"placement: {','.join(pinned)} (kept)", pin=tuple(pinned))
        return None

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


def _share_slurm_would_split(job: JobInfo, ctx: Context) -> bool:
    """A share of one card that Slurm, placing it itself, might take from several cards
    (23.11+ with MULTIPLE_SHARING_GRES_PJ): AIPool keeps a share on one card, so such a job
    waits, held, for a card with room instead."""
    if not ctx.snapshot.shards_across_cards or not job.demand.shards:
        return False
    per_card = [n.shards_per_gpu for n in ctx.snapshot.nodes if n.gpus]
    return bool(per_card) and job.demand.shards <= min(per_card)


def _unpinned(job: JobInfo) -> JobInfo:
    """The job without the pin we set before, so a full node can be swapped for another."""
    if not job.required_nodes:
        return job
    from dataclasses import replace

    return replace(job, required_nodes=())


__all__: Sequence[str] = ("Placement", "fullness_weight")
