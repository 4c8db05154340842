"""The ``health:`` section of the policy daemon's configuration.

```yaml
health:
  reports: /shared/aipool/samples   # agents' <node>.health.json (default: samples.dir)
  interval: 30s                     # how often `aipool health run` checks
  max_clock_skew: 1s                # a node's clock further off than this is drained
  report_max_age: 3m                # an older report counts as "no report" (never drains)
  recover_after: 3                  # consecutive healthy checks before a drained node returns
  drain: true                       # false: only tell the admins
  max_drained: 0.5                  # at most this fraction of the nodes drained at once
  require_sync: false               # true: an unsynchronised clock drains even within the skew
  nodes: []                         # only these nodes (empty: all)
  metrics: 127.0.0.1:9103           # `aipool health run` serves /metrics here (default: off)
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marshmallow import RAISE, Schema, fields, validate

from plumbing.address import Address
from plumbing.fields import Duration, ListenAddress


@dataclass(frozen=True, slots=True)
class HealthConfig:
    reports: Path | None = None
    interval_s: float = 30.0
    max_clock_skew_s: float = 1.0
    report_max_age_s: float = 180.0
    recover_after: int = 3
    drain: bool = True
    max_drained: float = 0.5
    require_sync: bool = False
    nodes: tuple[str, ...] = ()
    #: Where ``aipool health run`` serves ``/metrics``; None: nowhere.
    metrics: Address | None = None


class HealthSchema(Schema):
    class Meta:
        unknown = RAISE

    reports = fields.String(load_default=None, allow_none=True)
    interval = Duration(load_default=30.0)
    max_clock_skew = Duration(load_default=1.0)
    report_max_age = Duration(load_default=180.0)
    recover_after = fields.Integer(load_default=3, validate=validate.Range(min=1, max=1000))
    drain = fields.Boolean(load_default=True)
    max_drained = fields.Float(load_default=0.5, validate=validate.Range(min=0, max=1))
    require_sync = fields.Boolean(load_default=False)
    nodes = fields.List(fields.String(validate=validate.Length(min=1)), load_default=list)
    metrics = ListenAddress(load_default=None, allow_none=True)


def health_config(
    raw: Mapping[str, Any] | None,
    *,
    samples_dir: Path | None,
    path: Callable[[str | None], Path | None],
) -> HealthConfig | None:
    """What :class:`HealthSchema` loaded → :class:`HealthConfig`; None without a section."""
    if raw is None:
        return None
    return HealthConfig(
        reports=path(raw["reports"]) or samples_dir,
        interval_s=raw["interval"],
        max_clock_skew_s=raw["max_clock_skew"],
        report_max_age_s=raw["report_max_age"],
        recover_after=raw["recover_after"],
        drain=raw["drain"],
        max_drained=raw["max_drained"],
        require_sync=raw["require_sync"],
        nodes=tuple(raw["nodes"]),
        metrics=raw["metrics"],
    )
