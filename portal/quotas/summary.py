"""What the admission hook will enforce, per tenant and per user, read off the policy the
portal renders: the table the quotas page shows above the raw Lua (pure; no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from slurm_plugins.admission.config import Kind, PolicyConfig, PriorityClass, Tenant


@dataclass(frozen=True, slots=True)
class PoolRow:
    name: str
    kind: Kind
    partitions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TenantRow:
    name: str
    domain: str
    account: str
    pools: tuple[PoolRow, ...]
    qos: tuple[str, ...]  # Slurm QOS of the tenant's priority classes, the default first
    gpus: float | None  # per job, in cards (shards as fractions); None: no limit
    npus: float | None
    time_min: int | None
    default_time_min: int | None
    shard_sizes: tuple[Fraction, ...] | None  # allowed shares of a card; None: any that fits


@dataclass(frozen=True, slots=True)
class UserRow:
    name: str
    tenant: str | None  # the project of a job that names none
    qos: tuple[str, ...] | None  # the user's own priorities, instead of the project's
    unrestricted: bool


@dataclass(frozen=True, slots=True)
class PolicySummary:
    tenants: tuple[TenantRow, ...]
    users: tuple[UserRow, ...]
    shards_per_gpu: int


def _qos(
    classes: tuple[PriorityClass, ...], default: PriorityClass | None = None
) -> tuple[str, ...]:
    ordered = ([default] if default else []) + [c for c in classes if c != default]
    return tuple(c.qos for c in ordered)


def _tenant(cfg: PolicyConfig, t: Tenant) -> TenantRow:
    spg = cfg.cluster.shards_per_gpu
    pools = tuple(
        PoolRow(p.name, p.kind, p.partitions) for p in cfg.pools if p.shared or p.name in t.pools
    )
    sizes = tuple(Fraction(s, spg) for s in t.shard_sizes) if t.shard_sizes else None
    return TenantRow(
        name=t.name,
        domain=t.domain,
        account=t.account,
        pools=pools,
        qos=_qos(t.classes, t.default_class),
        gpus=t.limits.gpus,
        npus=t.limits.npus,
        time_min=t.limits.time_min,
        default_time_min=t.limits.default_time_min,
        shard_sizes=sizes,
    )


def summarise(cfg: PolicyConfig) -> PolicySummary:
    """The policy as rows a person reads: every tenant with the partitions it may use, its
    priorities and per-job limits; every user with their default project."""
    tenants = tuple(sorted((_tenant(cfg, t) for t in cfg.tenants), key=lambda r: r.name))
    users = tuple(
        UserRow(u.name, u.tenant, _qos(u.classes) if u.classes else None, u.unrestricted)
        for u in sorted(cfg.users, key=lambda u: u.name)
    )
    return PolicySummary(tenants, users, cfg.cluster.shards_per_gpu)
