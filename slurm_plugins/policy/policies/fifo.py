"""``fifo``: first submitted, first started.

The score falls linearly with submit time over a window that only moves once per
``window``, so a job's score (and the SiteFactor written for it) does not drift from cycle
to cycle; the engine's tie-break by submit time keeps exact FIFO among equal scores.
"""

from __future__ import annotations

import math
import time
from typing import Any

from marshmallow import Schema

from plumbing.fields import Duration
from slurm_plugins.policy.base import Context, Policy, register
from slurm_plugins.policy.snapshot import JobInfo


class FifoArgs(Schema):
    window = Duration(load_default=30 * 86400)


@register
class Fifo(Policy):
    name = "fifo"
    Args = FifoArgs

    def __init__(self, *, window: float = 30 * 86400, **args: Any) -> None:
        super().__init__(window=window, **args)
        self.window = max(float(window), 1.0)

    def score(self, job: JobInfo, ctx: Context) -> float:
        w = self.window
        origin = math.floor(ctx.now / w) * w - w
        return min(1.0, max(0.0, 1.0 - (job.submit - origin) / (2 * w)))

    def explain(self, job: JobInfo, ctx: Context) -> str:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(job.submit))
        return f"fifo {self.score(job, ctx):.3f} (submitted {at} UTC)"
