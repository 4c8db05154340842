"""The first level's policy: how to rank clusters, who may use which, where data lives.

strategy: spread        # spread (most free of the kind) | pack (least free that fits)
                        # | ordered (first in `clusters` order that fits)
locality: prefer        # prefer | require: clusters labelled with the job's data set
clusters:
  - {name: aipool, labels: [campus-a, imagenet]}
  - {name: aipool2, labels: [campus-b]}
tenants:                # Slurm account -> clusters it may use (absent: all)
  cs101: [aipool]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from plumbing.validation import flatten

_NAME = validate.Regexp(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", error="not a valid name")


class Strategy(StrEnum):
    SPREAD = "spread"
    PACK = "pack"
    ORDERED = "ordered"


class Locality(StrEnum):
    PREFER = "prefer"
    REQUIRE = "require"


class PolicyError(ValueError):
    """The federation policy file is invalid; the message names every bad field."""


class _Cluster(Schema):
    class Meta:
        unknown = RAISE

    name = fields.Str(required=True, validate=_NAME)
    labels = fields.List(fields.Str(validate=_NAME), load_default=list)


class _Policy(Schema):
    class Meta:
        unknown = RAISE

    strategy = fields.Enum(Strategy, by_value=True, load_default=Strategy.SPREAD)
    locality = fields.Enum(Locality, by_value=True, load_default=Locality.PREFER)
    clusters = fields.List(fields.Nested(_Cluster), load_default=list)
    tenants = fields.Dict(
        keys=fields.Str(validate=_NAME),
        values=fields.List(fields.Str(validate=_NAME), validate=validate.Length(min=1)),
        load_default=dict,
    )


@dataclass(frozen=True, slots=True)
class FederationPolicy:
    strategy: Strategy = Strategy.SPREAD
    locality: Locality = Locality.PREFER
    order: tuple[str, ...] = ()  # clusters in the policy's order
    labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    tenants: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def allowed(self, account: str | None, cluster: str) -> bool:
        """Clusters a tenant may use; a tenant the policy does not list may use all."""
        if account is None or account not in self.tenants:
            return True
        return cluster in self.tenants[account]

    def rank(self, cluster: str) -> int:
        return self.order.index(cluster) if cluster in self.order else len(self.order)


def parse_policy(raw: Any, *, source: str = "federation policy") -> FederationPolicy:
    try:
        data = _Policy().load(raw or {})
    except ValidationError as exc:
        raise PolicyError(f"{source}: {'; '.join(flatten(exc.messages))}") from exc
    names = [c["name"] for c in data["clusters"]]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PolicyError(f"{source}: clusters: listed twice: {', '.join(dupes)}")
    if names:
        for account, allowed in sorted(data["tenants"].items()):
            unknown = sorted(set(allowed) - set(names))
            if unknown:
                raise PolicyError(
                    f"{source}: tenants.{account}: unknown cluster(s) {', '.join(unknown)}"
                )
    return FederationPolicy(
        strategy=data["strategy"],
        locality=data["locality"],
        order=tuple(names),
        labels={c["name"]: frozenset(c["labels"]) for c in data["clusters"]},
        tenants={k: frozenset(v) for k, v in data["tenants"].items()},
    )


def load_policy(path: Path | None) -> FederationPolicy:
    """The policy in ``path``; the defaults (spread, prefer, no restrictions) without one."""
    if path is None:
        return FederationPolicy()
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML: {exc}") from exc
    return parse_policy(raw, source=str(path))
