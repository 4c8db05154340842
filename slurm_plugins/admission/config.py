"""The admission policy: who may submit what where, loaded from YAML and validated.

The policy names pools (sets of Slurm partitions holding one kind of device), tenants (a
Slurm account each, in a domain such as teaching or research) and users. It is parsed once,
here, into frozen data; :mod:`slurm_plugins.admission.table` turns it into the Lua table the
hook reads. Every error names the field it concerns (``tenants.cs101.limits.time: …``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from gres.naming import DEFAULT_SHARDS_PER_GPU
from gres.shards import MAX_SHARDS_PER_GPU, ShardPlan
from plumbing.validation import flatten

LAB_POLICY = Path(__file__).resolve().parent / "lab-policy.yaml"

#: Names of pools, tenants, domains, partitions, accounts, users and GRES: plain tokens, so
#: they read well in messages and tags (the Lua table quotes every string regardless).
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
NAME_HINT = "must be 1-64 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


class PolicyError(ValueError):
    """The policy file is invalid; ``messages`` are ``path: message`` lines."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = tuple(messages)
        super().__init__("\n".join(self.messages))


class Kind(StrEnum):
    """What a pool's nodes hold, and what a job asks for."""

    GPU = "gpu"
    NPU = "npu"
    CPU = "cpu"
    #: Cambricon MLUs, Hygon DCUs, Kunlunxin XPUs (GRES mlu, dcu, xpu)
    ACCEL = "accel"


class PriorityClass(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def qos(self) -> str:
        """The Slurm QOS of the class: ``medium`` is Slurm's ``normal``."""
        return "normal" if self is PriorityClass.MEDIUM else self.value


@dataclass(frozen=True, slots=True)
class Cluster:
    #: The partition Slurm uses for a job that names none (``Default=YES`` in slurm.conf).
    default_partition: str
    shards_per_gpu: int
    #: GRES name -> the kind of device it is (``shard`` is a share of a GPU).
    gres: Mapping[str, Kind]
    #: GRES type -> the share of a card one device is (vNPUs), for per-job limits.
    fractions: Mapping[str, float]
    #: Jobs wait for the policy daemon's placement while its heartbeat is fresh; None: never.
    placement: Placement | None = None
    #: May one job's shards come from several cards of a node (``--gres=shard:N`` with N
    #: above one card)? slurm.conf must then have ``MULTIPLE_SHARING_GRES_PJ`` (Slurm 23.11+).
    #: None: as the Slurm release the hook is rendered for allows (the lab sets the flag).
    shards_across_cards: bool | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """How the hook lets the policy daemon place jobs before Slurm may start them.

    While the file ``heartbeat`` (beside the table; the daemon touches it) changed within
    ``lapse_s``, a job for a GPU or NPU partition is given a begin time ``defer_s`` ahead:
    the daemon pins it and starts it at once. Once the heartbeat lapses, jobs go to Slurm
    unchanged, and those already waiting start when their begin time comes.
    """

    heartbeat: str
    lapse_s: int = 10
    defer_s: int = 20


@dataclass(frozen=True, slots=True)
class Pool:
    name: str
    kind: Kind
    partitions: tuple[str, ...]
    #: Open to every tenant; a dedicated pool only to the tenants that list it.
    shared: bool


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-job limits; None is no limit. GPUs and NPUs count shares of a card (shards, vNPUs)."""

    gpus: float | None = None
    npus: float | None = None
    time_min: int | None = None
    #: Filled in when a job gives no ``--time``.
    default_time_min: int | None = None


@dataclass(frozen=True, slots=True)
class Tenant:
    name: str
    domain: str
    account: str
    pools: tuple[str, ...]
    classes: tuple[PriorityClass, ...]
    default_class: PriorityClass
    #: Allowed ``--gres=shard:N`` sizes; None allows every size that fits on one card.
    shard_sizes: tuple[int, ...] | None
    limits: Limits


@dataclass(frozen=True, slots=True)
class User:
    name: str
    #: Tenant of jobs that name no ``--account``; None falls back to Slurm's default account.
    tenant: str | None = None
    #: Priority classes of this user, instead of the tenant's.
    classes: tuple[PriorityClass, ...] | None = None
    #: Operators and root: jobs are tagged, never checked.
    unrestricted: bool = False


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    cluster: Cluster
    pools: tuple[Pool, ...]
    tenants: tuple[Tenant, ...]
    users: tuple[User, ...]

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)


# ---------------------------------------------------------------------------- schema
def parse_minutes(value: object) -> int:
    """Slurm time (``90``, ``1:30:00``, ``2-00:00:00``, ``1-12``) or whole minutes -> minutes."""
    if isinstance(value, bool):
        raise ValueError("must be a Slurm time such as 90, 4:00:00 or 2-00:00:00")
    if isinstance(value, int):
        if value < 1:
            raise ValueError("must be at least one minute")
        return value
    m = _TIME.match(str(value).strip())
    if not m:
        raise ValueError("must be a Slurm time such as 90, 4:00:00 or 2-00:00:00")
    days, a, b, c = m.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # days-hours[:minutes[:seconds]]
        h, mi, s = [*parts, 0, 0][:3]
        seconds = ((int(days) * 24 + h) * 60 + mi) * 60 + s
    elif len(parts) == 3:  # hours:minutes:seconds
        seconds = (parts[0] * 60 + parts[1]) * 60 + parts[2]
    elif len(parts) == 2:  # minutes:seconds
        seconds = parts[0] * 60 + parts[1]
    else:
        seconds = parts[0] * 60
    if seconds < 1:
        raise ValueError("must be at least one minute")
    return math.ceil(seconds / 60)


class _Duration(fields.Field[int]):
    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> int:
        try:
            return parse_minutes(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


def _name(**kwargs: Any) -> fields.String:
    return fields.String(validate=validate.Regexp(NAME, error=NAME_HINT), **kwargs)


class _Strict(Schema):
    class Meta:
        unknown = RAISE


class _PlacementSchema(_Strict):
    heartbeat = _name(required=True)
    lapse = fields.Integer(strict=True, load_default=10, validate=validate.Range(1, 3600))
    defer = fields.Integer(strict=True, load_default=20, validate=validate.Range(1, 3600))


class _ClusterSchema(_Strict):
    default_partition = _name(required=True)
    shards_per_gpu = fields.Integer(
        load_default=DEFAULT_SHARDS_PER_GPU,
        strict=True,
        validate=validate.Range(1, MAX_SHARDS_PER_GPU),
    )
    gres = fields.Dict(
        keys=_name(),
        values=fields.Enum(Kind, by_value=True),
        load_default=lambda: {"gpu": Kind.GPU, "shard": Kind.GPU, "npu": Kind.NPU},
    )
    fractions = fields.Dict(
        keys=_name(),
        values=fields.Float(allow_nan=False, validate=validate.Range(0, 1, min_inclusive=False)),
        load_default=dict,
    )
    placement = fields.Nested(_PlacementSchema, load_default=None, allow_none=True)
    shards_across_cards = fields.Boolean(load_default=None, allow_none=True)


class _PoolSchema(_Strict):
    kind = fields.Enum(Kind, by_value=True, required=True)
    partitions = fields.List(_name(), required=True, validate=validate.Length(min=1))
    shared = fields.Boolean(load_default=False)


class _LimitsSchema(_Strict):
    gpus = fields.Float(allow_nan=False, validate=validate.Range(min=0), load_default=None)
    npus = fields.Float(allow_nan=False, validate=validate.Range(min=0), load_default=None)
    time = _Duration(load_default=None)
    default_time = _Duration(load_default=None)


_CLASS = fields.Enum(PriorityClass, by_value=True)


class _TenantSchema(_Strict):
    domain = _name(required=True)
    account = _name(load_default=None)
    pools = fields.List(_name(), load_default=list)
    classes = fields.List(
        _CLASS,
        load_default=lambda: [PriorityClass.MEDIUM, PriorityClass.LOW],
        validate=validate.Length(min=1),
    )
    default_class = fields.Enum(PriorityClass, by_value=True, load_default=PriorityClass.MEDIUM)
    shard_sizes = fields.List(
        fields.Integer(strict=True, validate=validate.Range(min=1)),
        load_default=None,
        validate=validate.Length(min=1),
    )
    limits = fields.Nested(_LimitsSchema, load_default=dict)


class _UserSchema(_Strict):
    tenant = _name(load_default=None)
    classes = fields.List(_CLASS, load_default=None, validate=validate.Length(min=1))
    unrestricted = fields.Boolean(load_default=False)


class _PolicySchema(_Strict):
    version = fields.Integer(required=True, strict=True, validate=validate.Equal(1))
    cluster = fields.Nested(_ClusterSchema, required=True)
    pools = fields.Dict(keys=_name(), values=fields.Nested(_PoolSchema), required=True)
    tenants = fields.Dict(keys=_name(), values=fields.Nested(_TenantSchema), required=True)
    users = fields.Dict(keys=_name(), values=fields.Nested(_UserSchema), load_default=dict)


# ---------------------------------------------------------------------------- loading
def load_policy(path: Path) -> PolicyConfig:
    """Read and validate a policy file; raises :class:`PolicyError` naming every problem."""
    try:
        raw: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError([f"{path}: {exc.strerror or exc}"]) from None
    except yaml.YAMLError as exc:
        raise PolicyError([f"{path}: not valid YAML: {exc}"]) from None
    return parse_policy(raw)


def parse_policy(raw: object) -> PolicyConfig:
    """Validate already-parsed YAML (a mapping) into a :class:`PolicyConfig`."""
    if not isinstance(raw, Mapping):
        raise PolicyError(["the policy must be a mapping with version, cluster, pools, tenants"])
    try:
        data: dict[str, Any] = _PolicySchema().load(raw)
    except ValidationError as exc:
        raise PolicyError(flatten(exc.messages)) from None
    cfg = _build(data)
    problems = check(cfg)
    if problems:
        raise PolicyError(problems)
    return cfg


def _build(data: Mapping[str, Any]) -> PolicyConfig:
    c = data["cluster"]
    cluster = Cluster(
        default_partition=c["default_partition"],
        shards_per_gpu=c["shards_per_gpu"],
        gres=dict(sorted(c["gres"].items())),
        fractions=dict(sorted(c["fractions"].items())),
        placement=_placement(c["placement"]),
        shards_across_cards=c["shards_across_cards"],
    )
    pools = tuple(
        Pool(name, p["kind"], tuple(p["partitions"]), p["shared"])
        for name, p in data["pools"].items()
    )
    tenants = []
    for name, t in data["tenants"].items():
        lim = {"gpus": None, "npus": None, "time": None, "default_time": None, **t["limits"]}
        default_time = lim["default_time"] if lim["default_time"] is not None else lim["time"]
        tenants.append(
            Tenant(
                name=name,
                domain=t["domain"],
                account=t["account"] or name,
                pools=tuple(t["pools"]),
                classes=tuple(dict.fromkeys(t["classes"])),
                default_class=t["default_class"],
                shard_sizes=None
                if t["shard_sizes"] is None
                else tuple(sorted(set(t["shard_sizes"]))),
                limits=Limits(lim["gpus"], lim["npus"], lim["time"], default_time),
            )
        )
    users = tuple(
        User(
            name,
            u["tenant"],
            None if u["classes"] is None else tuple(dict.fromkeys(u["classes"])),
            u["unrestricted"],
        )
        for name, u in data["users"].items()
    )
    return PolicyConfig(cluster, pools, tuple(tenants), users)


def _placement(raw: Mapping[str, Any] | None) -> Placement | None:
    if raw is None:
        return None
    return Placement(raw["heartbeat"], raw["lapse"], raw["defer"])


def check(cfg: PolicyConfig) -> list[str]:
    """Rules across fields: references resolve, pools stay apart, defaults are allowed."""
    out: list[str] = []
    plan = ShardPlan(cfg.cluster.shards_per_gpu)
    pools = {p.name: p for p in cfg.pools}
    owner: dict[str, str] = {}
    for p in cfg.pools:
        for part in p.partitions:
            if part in owner:
                out.append(f"pools.{p.name}.partitions: {part} is already in pool {owner[part]}")
            owner.setdefault(part, p.name)
    if cfg.cluster.default_partition not in owner:
        out.append(f"cluster.default_partition: {cfg.cluster.default_partition} is in no pool")
    accounts: dict[str, str] = {}
    domains_of_pool: dict[str, set[str]] = {}
    for t in cfg.tenants:
        at = f"tenants.{t.name}"
        if t.account in accounts:
            out.append(f"{at}.account: {t.account} is already tenant {accounts[t.account]}'s")
        accounts.setdefault(t.account, t.name)
        for i, name in enumerate(t.pools):
            if name not in pools:
                out.append(f"{at}.pools[{i}]: unknown pool {name}")
            elif not pools[name].shared:
                domains_of_pool.setdefault(name, set()).add(t.domain)
        if t.default_class not in t.classes:
            out.append(f"{at}.default_class: {t.default_class} is not in classes")
        for size in t.shard_sizes or ():
            if not plan.fits_one_card(size):
                out.append(
                    f"{at}.shard_sizes: {size} does not fit on one GPU "
                    f"({cfg.cluster.shards_per_gpu} shards per GPU)"
                )
        lim = t.limits
        if lim.time_min is not None and (lim.default_time_min or 0) > lim.time_min:
            out.append(f"{at}.limits.default_time: longer than limits.time")
    for name, domains in sorted(domains_of_pool.items()):
        if len(domains) > 1:
            out.append(
                f"pools.{name}: a dedicated pool serves one domain, but tenants of "
                f"{', '.join(sorted(domains))} list it (mark it shared: true or split it)"
            )
    tenants = {t.name: t for t in cfg.tenants}
    for u in cfg.users:
        at = f"users.{u.name}"
        if u.unrestricted and (u.tenant is not None or u.classes is not None):
            out.append(f"{at}: an unrestricted user takes no tenant or classes")
        if u.tenant is not None and u.tenant not in tenants:
            out.append(f"{at}.tenant: unknown tenant {u.tenant}")
        elif u.tenant is not None and u.classes is not None:
            default = tenants[u.tenant].default_class
            if default not in u.classes:
                out.append(f"{at}.classes: must include {default}, tenant {u.tenant}'s default")
    for gres_type in cfg.cluster.fractions:
        if gres_type in cfg.cluster.gres:
            out.append(f"cluster.fractions.{gres_type}: a GRES name, not a GRES type")
    if "shard" in cfg.cluster.gres and cfg.cluster.gres["shard"] is not Kind.GPU:
        out.append("cluster.gres.shard: shards are shares of a GPU (kind gpu)")
    return out
