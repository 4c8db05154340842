"""``reschedule``: move work off failing or drained nodes, and defragment.

**Migration.** A steered job running on a node that is drained (maintenance), draining or
marked failing is moved: it gets the checkpoint signal (``--signal``-style, default
``USR1``), ``requeue_delay`` later it is requeued, and Slurm starts it again on a healthy
node once ``AuthInfo=cred_expire`` has passed (10 s in the lab). With ``require_home`` (the
default) a job is only moved when the scratch view finds it room elsewhere now, so a drain
never turns running work into waiting work. Jobs submitted ``--no-requeue`` are left alone.

**Defragmentation** (``defrag: true``). A GPU node whose cards are used only by fractional
jobs — every one of them running for at least ``min_runtime`` — is emptied when *every* one
of those jobs fits on partly used cards of other nodes (best fit, never a fresh card). The
jobs are requeued held and, next cycle, pinned to their new node and released, so whole
cards come free for whole-card work. At most ``max_moves`` jobs move per cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from marshmallow import Schema, fields, validate

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Cycle, Policy, Verdict, register
from slurm_plugins.policy.cluster import FreeNode
from slurm_plugins.policy.plan import Action, JobAction
from slurm_plugins.policy.snapshot import JobInfo, NodeInfo


class RescheduleArgs(Schema):
    drain = fields.Boolean(load_default=True)
    require_home = fields.Boolean(load_default=True)
    checkpoint_signal = fields.String(load_default="USR1", allow_none=True)
    requeue_delay = Duration(load_default=10)
    defrag = fields.Boolean(load_default=False)
    min_runtime = Duration(load_default=600)
    max_moves = fields.Integer(load_default=4, validate=validate.Range(min=0))


def _why(n: NodeInfo) -> str:
    state = "failing" if n.failing else "drained"
    return f"node {n.name} {state}" + (f" ({n.reason})" if n.reason else "")


@register
class Reschedule(Policy):
    name = "reschedule"
    Args = RescheduleArgs

    def __init__(
        self,
        *,
        drain: bool = True,
        require_home: bool = True,
        checkpoint_signal: str | None = "USR1",
        requeue_delay: float = 10,
        defrag: bool = False,
        min_runtime: float = 600,
        max_moves: int = 4,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.drain = drain
        self.require_home = require_home
        self.signal = checkpoint_signal
        self.delay = requeue_delay
        self.defrag = defrag
        self.min_runtime = min_runtime
        self.max_moves = max_moves

    # -------------------------------------------------------------- pinning moved jobs
    def admit(self, job: JobInfo, ctx: Context, cycle: Cycle) -> Verdict | None:
        target = ctx.state.targets.get(job.job_id)
        if target is None:
            return None
        return Verdict(reason=f"reschedule: moved to {target} to defragment", pin=(target,))

    # -------------------------------------------------------------- victims
    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        out: list[JobAction] = []
        if self.drain:
            out += self._migrations(ctx, cycle)
        if self.defrag:
            moving = {a.job_id for a in out}
            out += self._defrag(ctx, cycle, moving)
        return out

    def _migrations(self, ctx: Context, cycle: Cycle) -> list[JobAction]:
        out = []
        for job in ctx.movable:
            bad = [ctx.nodes[n] for n in job.nodes if n in ctx.nodes]
            bad = [n for n in bad if n.draining or n.failing]
            if not bad or not job.requeue:
                continue
            why = _why(bad[0])
            mark = ctx.state.signalled.get(job.job_id)
            if mark is not None:
                due = mark.since + self.delay
                if ctx.now >= due:
                    out.append(
                        self._act(
                            job, Action.REQUEUE, f"reschedule: {why}; requeued to run elsewhere"
                        )
                    )
                else:
                    cycle.wake.append(due)
                continue
            if self.require_home and not self._home(job, cycle):
                continue
            if self.signal and self.delay > 0:
                out.append(
                    self._act(
                        job,
                        Action.SIGNAL,
                        f"reschedule: {why}; checkpoint signal {self.signal}, "
                        f"requeue in {self.delay:g} s",
                        self.signal,
                    )
                )
                cycle.wake.append(ctx.now + self.delay)
            else:
                out.append(
                    self._act(job, Action.REQUEUE, f"reschedule: {why}; requeued to run elsewhere")
                )
        return out

    def _act(
        self, job: JobInfo, action: Action, reason: str, signal: str | None = None
    ) -> JobAction:
        return JobAction(job.job_id, action, reason, signal, self.name)

    @staticmethod
    def _home(job: JobInfo, cycle: Cycle) -> bool:
        """Reserve room for the job elsewhere (draining nodes take no work)."""
        exclude = set(job.nodes)
        nodes = cycle.view.find(job, exclude=exclude)
        if nodes is None:
            return False
        cycle.view.reserve(job, nodes)
        return True

    # -------------------------------------------------------------- defragmentation
    def _defrag(self, ctx: Context, cycle: Cycle, moving: set[int]) -> list[JobAction]:
        view = cycle.view
        by_node: dict[str, list[JobInfo]] = {}
        for j in ctx.running:
            for n in j.nodes:
                by_node.setdefault(n, []).append(j)
        out: list[JobAction] = []
        sources = sorted(
            (fn for fn in view.nodes.values() if fn.ok and fn.info.gpus and by_node.get(fn.name)),
            key=lambda fn: (sum(fn.info.card_used), fn.name),  # emptiest first: cheapest to free
        )
        for src in sources:
            jobs = by_node[src.name]
            if len(out) + len(jobs) > self.max_moves:
                continue
            if not all(self._may_move(j, ctx, moving) for j in jobs):
                continue
            plan = self._rehome(jobs, src, cycle)
            if plan is None:
                continue
            for j, target in plan:
                moving.add(j.job_id)
                out.append(
                    JobAction(
                        j.job_id,
                        Action.REQUEUE_HOLD,
                        f"reschedule: defragment {src.name} (frees {src.info.gpus} whole cards); "
                        f"moving to {target}",
                        policy=self.name,
                        target=target,
                    )
                )
        return out

    def _may_move(self, j: JobInfo, ctx: Context, moving: set[int]) -> bool:
        started = j.start if j.start is not None else ctx.now
        return (
            j.demand.fractional
            and j.node_count == 1
            and j.requeue
            and j.job_id not in moving
            and ctx.select.matches(j)
            and ctx.now - started >= self.min_runtime
        )

    def _rehome(
        self, jobs: list[JobInfo], src: FreeNode, cycle: Cycle
    ) -> list[tuple[JobInfo, str]] | None:
        """A partly used card elsewhere for every job (best fit), or None; nothing kept
        reserved on failure."""
        view = cycle.view
        placed: list[tuple[JobInfo, str]] = []
        for j in sorted(jobs, key=lambda j: -j.demand.shards):
            best: FreeNode | None = None
            best_left = 10**9
            for fn in view.hosts(j, exclude={src.name}):
                if not fn.fits(j.demand):
                    continue
                left = min(
                    (f - j.demand.shards for f in fn.card_free if j.demand.shards <= f < fn.spg),
                    default=None,
                )
                if left is not None and left < best_left:
                    best, best_left = fn, left
            if best is None:
                for pj, _ in placed:
                    view.unreserve(pj)
                return None
            view.reserve(j, [best.name])
            placed.append((j, best.name))
        return placed
