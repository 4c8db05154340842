"""``priority``: classes high / medium / low (Slurm QOS) with aging.

A pending job's score is its class value plus ``aging_step`` for every full
``aging_period`` it has waited (at most ``max_boost``). With the defaults a low job that
waited four hours scores like a fresh high one, and the tie-break by submit time then puts
it first: low work is delayed, never starved. The boost grows in steps, so the SiteFactor
only changes when a job crosses one.
"""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Policy, register
from slurm_plugins.policy.snapshot import JobInfo

DEFAULT_CLASSES = {"high": 1.0, "normal": 0.5, "medium": 0.5, "low": 0.0}


class PriorityArgs(Schema):
    classes = fields.Dict(
        keys=fields.String(),
        values=fields.Float(validate=validate.Range(0, 1)),
        load_default=lambda: dict(DEFAULT_CLASSES),
    )
    default = fields.Float(load_default=0.5, validate=validate.Range(0, 1))
    aging_period = Duration(load_default=3600)
    aging_step = fields.Float(load_default=0.25, validate=validate.Range(0, 1))
    max_boost = fields.Float(load_default=1.0, validate=validate.Range(0, 1))


@register
class Priority(Policy):
    name = "priority"
    Args = PriorityArgs

    def __init__(
        self,
        *,
        classes: dict[str, float] | None = None,
        default: float = 0.5,
        aging_period: float = 3600,
        aging_step: float = 0.25,
        max_boost: float = 1.0,
        **args: Any,
    ) -> None:
        super().__init__(**args)
        self.classes = dict(DEFAULT_CLASSES if classes is None else classes)
        self.default = default
        self.period = max(float(aging_period), 1.0)
        self.step = aging_step
        self.max_boost = max_boost

    def base(self, job: JobInfo, ctx: Context) -> float:
        """The value of the job's own class (capacity may run it in another QOS)."""
        return self.classes.get(ctx.qos_class(job), self.default)

    def boost(self, job: JobInfo, ctx: Context) -> float:
        waited = max(ctx.now - job.submit, 0.0)
        return min(self.max_boost, (waited // self.period) * self.step)

    def score(self, job: JobInfo, ctx: Context) -> float:
        return min(1.0, self.base(job, ctx) + self.boost(job, ctx))

    def explain(self, job: JobInfo, ctx: Context) -> str:
        b = self.boost(job, ctx)
        aged = f" + aging {b:.3f}" if b else ""
        cls, base = ctx.qos_class(job), self.base(job, ctx)
        return f"priority {self.score(job, ctx):.3f} (class {cls} {base:.2f}{aged})"
