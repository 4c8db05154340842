"""The policy daemon's configuration: YAML, validated once at the edge with marshmallow.

Every error names where it is (``policies[1].args.half_life: not a duration: '7x'``), and
all errors of a file are reported together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from plumbing import webhooks
from plumbing.address import Address
from plumbing.errors import ConfigError
from plumbing.fields import Duration, ListenAddress
from plumbing.validation import flatten
from slurm_plugins.health.config import HealthConfig, HealthSchema, health_config
from slurm_plugins.policy.base import REGISTRY, Select
from slurm_plugins.policy.engine import EngineConfig, PolicyConfig
from slurm_plugins.policy.fields import resource_map
from slurm_plugins.policy.snapshot import Tenant
from translations import DEFAULT, LOCALES

LAB_CONFIG = Path(__file__).resolve().parent / "lab-daemon.yaml"


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """``metrics:`` of the daemon's file: where to serve, and the ``cluster`` label."""

    address: Address
    cluster: str = "default"


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    engine: EngineConfig = field(default_factory=EngineConfig)
    tenants: tuple[Tenant, ...] = ()
    interval_s: float = 30.0
    state_dir: Path = Path("/var/lib/aipool/policy")
    #: Extra environment for the Slurm commands (e.g. ``SLURM_CONF``).
    env: Mapping[str, str] = field(default_factory=dict)
    usage_window_s: float = 28 * 86400
    usage_refresh_s: float = 300
    notify_log: bool = True
    notify_file: Path | None = None
    #: accounting's alert configuration (SMTP server, users' addresses): e-mail the notices too
    notify_email: Path | None = None
    #: webhooks (chat robots, JSON receivers) the notices are posted to, in notify_locale
    notify_webhooks: tuple[webhooks.Hook, ...] = ()
    notify_locale: str = "en"
    samples_dir: Path | None = None
    samples_max_age_s: float = 3600
    #: Node health checks (``aipool health run``); None: not enabled.
    health: HealthConfig | None = None
    #: File the daemon touches while it places jobs; the admission hook defers jobs for it
    #: only while that is fresh (it lies beside the hook's table). None: no heartbeat.
    heartbeat: Path | None = None
    #: How often the daemon asks slurmctld's job counters for new submissions, to place
    #: them at once rather than at the next ``interval``; 0: only every ``interval``.
    watch_s: float = 0.0
    #: Where to serve ``/metrics``; None (the default): no metrics, no port bound.
    metrics: MetricsConfig | None = None


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class PolicySchema(_Strict):
    name = fields.String(required=True)
    weight = fields.Float(load_default=1.0, validate=validate.Range(min=0))
    tier = fields.Integer(load_default=0, validate=validate.Range(min=0))
    args = fields.Dict(keys=fields.String(), load_default=dict)


class IdleSchema(_Strict):
    threshold = fields.Float(validate=validate.Range(0, 100))
    period = Duration()


class TenantSchema(_Strict):
    accounts = fields.List(fields.String(), load_default=list)
    cohort = fields.String(load_default=None, allow_none=True)
    nominal = resource_map(load_default=dict)
    borrowing_limit = resource_map(load_default=dict)
    lending_limit = resource_map(load_default=dict)
    shares = fields.Float(load_default=1.0, validate=validate.Range(min=0, min_inclusive=False))
    idle = fields.Nested(IdleSchema, load_default=None, allow_none=True)


class SiteFactorSchema(_Strict):
    scale = fields.Integer(load_default=1_000_000, validate=validate.Range(1, 2_000_000_000))
    deadband = fields.Integer(load_default=2_000, validate=validate.Range(min=0))


class UsageSchema(_Strict):
    window = Duration(load_default=28 * 86400)
    refresh = Duration(load_default=300)


class WebhookSchema(_Strict):
    type = fields.String(
        required=True, validate=validate.OneOf([t.value for t in webhooks.HookType])
    )
    url = fields.Url(required=True, schemes={"http", "https"}, require_tld=False)
    secret = fields.String(load_default="")
    format = fields.String(load_default="text", validate=validate.OneOf(["text", "markdown"]))


class NotifySchema(_Strict):
    log = fields.Boolean(load_default=True)
    file = fields.String(load_default=None, allow_none=True)
    email = fields.String(load_default=None, allow_none=True)
    #: chat robots or JSON receivers the notices go to as well
    webhooks = fields.List(fields.Nested(WebhookSchema), load_default=list)
    #: the language of the webhooks' messages (the site's)
    locale = fields.String(load_default=DEFAULT, validate=validate.OneOf(sorted(LOCALES)))


class SamplesSchema(_Strict):
    dir = fields.String(load_default=None, allow_none=True)
    max_age = Duration(load_default=3600)


class SelectSchema(_Strict):
    partitions = fields.List(fields.String(), load_default=list)
    accounts = fields.List(fields.String(), load_default=list)
    name_prefix = fields.String(load_default="")


class PlacementSchema(_Strict):
    heartbeat = fields.String(load_default=None, allow_none=True)
    watch = Duration(load_default=0.25)


class MetricsSchema(_Strict):
    address = ListenAddress(required=True)
    cluster = fields.String(load_default="default", validate=validate.Length(min=1))


class ConfigSchema(_Strict):
    version = fields.Integer(load_default=1, validate=validate.Equal(1))
    interval = Duration(load_default=30)
    state_dir = fields.String(load_default="/var/lib/aipool/policy")
    slurm_conf = fields.String(load_default=None, allow_none=True)
    select = fields.Nested(SelectSchema, load_default=lambda: SelectSchema().load({}))
    site_factor = fields.Nested(SiteFactorSchema, load_default=lambda: SiteFactorSchema().load({}))
    lookahead = fields.Integer(load_default=300, validate=validate.Range(min=0))
    usage = fields.Nested(UsageSchema, load_default=lambda: UsageSchema().load({}))
    admins = fields.List(fields.String(), load_default=lambda: ["root"])
    notify = fields.Nested(NotifySchema, load_default=lambda: NotifySchema().load({}))
    samples = fields.Nested(SamplesSchema, load_default=lambda: SamplesSchema().load({}))
    tenants = fields.Dict(
        keys=fields.String(), values=fields.Nested(TenantSchema), load_default=dict
    )
    policies = fields.List(fields.Nested(PolicySchema), validate=validate.Length(min=1))
    health = fields.Nested(HealthSchema, load_default=None, allow_none=True)
    placement = fields.Nested(PlacementSchema, load_default=None, allow_none=True)
    metrics = fields.Nested(MetricsSchema, load_default=None, allow_none=True)


def _policy(i: int, raw: Mapping[str, Any], errors: list[str]) -> PolicyConfig | None:
    cls = REGISTRY.get(raw["name"])
    if cls is None:
        known = ", ".join(sorted(REGISTRY))
        errors.append(f"policies[{i}].name: unknown policy {raw['name']!r}; known: {known}")
        return None
    try:
        args = cls.Args(unknown=RAISE).load(raw["args"])
    except ValidationError as exc:
        errors += flatten(exc.messages, f"policies[{i}].args")
        return None
    return PolicyConfig(raw["name"], raw["weight"], raw["tier"], args)


def _tenant(name: str, raw: Mapping[str, Any]) -> Tenant:
    idle = raw["idle"] or {}
    return Tenant(
        name=name,
        accounts=tuple(raw["accounts"]),
        cohort=raw["cohort"],
        nominal=dict(raw["nominal"]),
        borrowing_limit=dict(raw["borrowing_limit"]),
        lending_limit=dict(raw["lending_limit"]),
        shares=raw["shares"],
        idle_threshold=idle.get("threshold"),
        idle_period_s=idle.get("period"),
    )


def parse_config(data: Any, *, base: Path | None = None) -> DaemonConfig:
    """Validate a loaded YAML document; raises :class:`ConfigError` with every problem."""
    if not isinstance(data, dict):
        raise ConfigError(["config: expected a mapping at the top level"])
    try:
        raw = ConfigSchema().load(data)
    except ValidationError as exc:
        raise ConfigError(flatten(exc.messages, root="config")) from exc
    errors: list[str] = []
    pols = [_policy(i, p, errors) for i, p in enumerate(raw["policies"])]
    names = [p["name"] for p in raw["policies"]]
    errors += [f"policies: {n!r} is listed twice" for n in sorted(set(names)) if names.count(n) > 1]
    for name, t in raw["tenants"].items():
        for r, lend in t["lending_limit"].items():
            if lend > t["nominal"].get(r, 0):
                errors.append(f"tenants.{name}.lending_limit.{r}: more than its nominal quota")
    if errors:
        raise ConfigError(errors)

    def path(p: str | None) -> Path | None:
        return None if p is None else (base / p if base and not Path(p).is_absolute() else Path(p))

    engine = EngineConfig(
        policies=tuple(p for p in pols if p is not None),
        select=Select(
            tuple(raw["select"]["partitions"]),
            tuple(raw["select"]["accounts"]),
            raw["select"]["name_prefix"],
        ),
        site_factor_scale=raw["site_factor"]["scale"],
        site_factor_deadband=raw["site_factor"]["deadband"],
        lookahead=raw["lookahead"],
        admins=tuple(raw["admins"]),
    )
    return DaemonConfig(
        engine=engine,
        tenants=tuple(_tenant(n, t) for n, t in sorted(raw["tenants"].items())),
        interval_s=raw["interval"],
        state_dir=path(raw["state_dir"]) or Path(raw["state_dir"]),
        env={"SLURM_CONF": raw["slurm_conf"]} if raw["slurm_conf"] else {},
        usage_window_s=raw["usage"]["window"],
        usage_refresh_s=raw["usage"]["refresh"],
        notify_log=raw["notify"]["log"],
        notify_file=path(raw["notify"]["file"]),
        notify_email=path(raw["notify"]["email"]),
        notify_webhooks=tuple(
            webhooks.Hook(webhooks.HookType(h["type"]), h["url"], h["secret"], h["format"])
            for h in raw["notify"]["webhooks"]
        ),
        notify_locale=raw["notify"]["locale"],
        samples_dir=path(raw["samples"]["dir"]),
        samples_max_age_s=raw["samples"]["max_age"],
        health=health_config(raw["health"], samples_dir=path(raw["samples"]["dir"]), path=path),
        heartbeat=path(raw["placement"]["heartbeat"]) if raw["placement"] else None,
        watch_s=raw["placement"]["watch"] if raw["placement"] else 0.0,
        metrics=MetricsConfig(**raw["metrics"]) if raw["metrics"] else None,
    )


def load_config(path: str | Path) -> DaemonConfig:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise ConfigError([f"{p}: {exc.strerror or exc}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{p}: not valid YAML: {exc}"]) from exc
    return parse_config(data)
