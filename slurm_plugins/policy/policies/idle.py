"""``idle``: release accelerators that jobs hold but do not use.

The node agents sample each job's GPU/NPU utilisation. A steered job holding GPUs or NPUs
whose every sample over the last ``period`` is under its tenant's ``threshold`` (the
tenant's ``idle`` settings, else this policy's) is *warned*: its owner and the admins are
told. If it is still idle ``grace`` after the warning, it is requeued or cancelled
(``action``) and they are told again. One busy sample after the warning withdraws it.
Jobs younger than ``period``, or with too few samples to judge, are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from marshmallow import Schema, fields, validate

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Cycle, Policy, register
from slurm_plugins.policy.plan import Action, JobAction
from slurm_plugins.policy.snapshot import JobInfo
from translations import N_, Message

# what the job's owner reads (mailed in their language); durations in minutes
_WARN = {
    Action.CANCEL: N_(
        "Your job's accelerators were used under %(threshold)s%% for %(period)s minutes "
        "(at most %(peak)s%%). It will be cancelled in %(grace)s minutes unless it uses them."
    ),
    Action.REQUEUE: N_(
        "Your job's accelerators were used under %(threshold)s%% for %(period)s minutes "
        "(at most %(peak)s%%). It will be requeued in %(grace)s minutes unless it uses them."
    ),
}
_STOP = {
    Action.CANCEL: N_(
        "Your job's accelerators were used under %(threshold)s%% for %(period)s minutes "
        "(at most %(peak)s%%) and were still idle %(grace)s minutes after the warning, so the "
        "job was cancelled to free them."
    ),
    Action.REQUEUE: N_(
        "Your job's accelerators were used under %(threshold)s%% for %(period)s minutes "
        "(at most %(peak)s%%) and were still idle %(grace)s minutes after the warning, so the "
        "job was requeued to free them."
    ),
}


class IdleArgs(Schema):
    threshold = fields.Float(load_default=10.0, validate=validate.Range(0, 100))
    period = Duration(load_default=1800)
    grace = Duration(load_default=600)
    action = fields.String(load_default="cancel", validate=validate.OneOf(["cancel", "requeue"]))
    min_samples = fields.Integer(load_default=3, validate=validate.Range(min=1))


def _human(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


@register
class Idle(Policy):
    name = "idle"
    Args = IdleArgs

    def __init__(
        self,
        *,
        threshold: float = 10.0,
        period: float = 1800,
        grace: float = 600,
        action: str = "cancel",
        min_samples: int = 3,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.threshold = threshold
        self.period = period
        self.grace = grace
        self.action = Action.CANCEL if action == "cancel" else Action.REQUEUE
        self.min_samples = min_samples

    def limits(self, job: JobInfo, ctx: Context) -> tuple[float, float]:
        t = ctx.tenant(job)
        threshold = t.idle_threshold if t and t.idle_threshold is not None else self.threshold
        period = t.idle_period_s if t and t.idle_period_s is not None else self.period
        return threshold, period

    def victims(self, ctx: Context, cycle: Cycle) -> Iterable[JobAction]:
        out = []
        every = ctx.snapshot.samples
        for job in ctx.movable:
            if job.job_id not in every or job.start is None or not job.amounts.accelerated:
                continue  # no samples, no evidence
            threshold, period = self.limits(job, ctx)
            if ctx.now - job.start < period:
                continue
            samples = [s for s in every[job.job_id] if s.ts >= ctx.now - period]
            if len(samples) < self.min_samples or samples[0].ts > ctx.now - period / 2:
                continue  # not enough evidence yet
            peak = max(s.util for s in samples)
            if peak >= threshold:
                continue
            act = self._decide(
                job, ctx=ctx, cycle=cycle, threshold=threshold, period=period, peak=peak
            )
            if act is not None:
                out.append(act)
        return out

    def _decide(
        self,
        job: JobInfo,
        *,
        ctx: Context,
        cycle: Cycle,
        threshold: float,
        period: float,
        peak: float,
    ) -> JobAction | None:
        idle = f"accelerator use under {threshold:g}% for {_human(period)} (peak {peak:g}%)"
        warned = ctx.state.warned.get(job.job_id)
        busy_since = warned is not None and any(
            s.util >= threshold
            for s in ctx.snapshot.samples.get(job.job_id, ())
            if s.ts >= warned.since
        )
        verb = "cancelled" if self.action is Action.CANCEL else "requeued"
        values = {
            "threshold": f"{threshold:g}",
            "period": f"{period / 60:g}",
            "peak": f"{peak:g}",
            "grace": f"{self.grace / 60:g}",
        }
        if warned is None or busy_since:
            cycle.wake.append(ctx.now + self.grace)
            return JobAction(
                job.job_id,
                Action.WARN,
                f"idle: {idle}; will be {verb} in {_human(self.grace)} unless it is used",
                policy=self.name,
                note=Message.of(_WARN[self.action], **values),
            )
        if ctx.now - warned.since >= self.grace:
            return JobAction(
                job.job_id,
                self.action,
                f"idle: {idle}, still idle {_human(self.grace)} after the warning; {verb}",
                policy=self.name,
                note=Message.of(_STOP[self.action], **values),
            )
        cycle.wake.append(warned.since + self.grace)
        return None
