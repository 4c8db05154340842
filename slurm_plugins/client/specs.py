"""Desired state of Slurm's accounting objects (QOS, accounts, user associations).

The ``ensure_*`` calls of the client diff these against what ``sacctmgr`` reports and send only
what differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from slurm_plugins.client.models import Association, Qos, Tres


@dataclass(frozen=True, slots=True)
class QosSpec:
    """A QOS as AIPool wants it to be."""

    name: str
    priority: int = 0
    preempt: tuple[str, ...] = ()
    grp_tres: Mapping[str, int] = field(default_factory=dict)

    def attributes(self, previous: Qos | None = None) -> dict[str, str]:
        """sacctmgr ``set`` attributes; limits no longer wanted are cleared."""
        attrs = {"Priority": str(self.priority)}
        if self.preempt or (previous and previous.preempt):
            attrs["Preempt"] = ",".join(self.preempt) or CLEAR
        if self.grp_tres or (previous and previous.grp_tres):
            attrs["GrpTRES"] = _tres_limits(self.grp_tres, previous.grp_tres if previous else None)
        return attrs

    def matches(self, q: Qos) -> bool:
        return (
            q.priority == self.priority
            and set(q.preempt) == set(self.preempt)
            and dict(q.grp_tres.counts) == dict(self.grp_tres)
        )


@dataclass(frozen=True, slots=True)
class AccountSpec:
    name: str
    parent: str = "root"
    description: str = ""
    grp_tres: Mapping[str, int] = field(default_factory=dict)
    grp_tres_mins: Mapping[str, int] = field(default_factory=dict)  # e.g. card-minutes

    def attributes(self, *, new: bool, previous: Association | None = None) -> dict[str, str]:
        attrs = {
            "Parent": self.parent,
            "Description": self.description or self.name,
            "Organization": self.parent if self.parent != "root" else self.name,
        }
        if previous is not None and previous.parent == self.parent:
            # sacctmgr 22.05 counts an unchanged parent as "Nothing modified", exits 1 and
            # leaves the association's limits (GrpTRES) as they were
            del attrs["Parent"]
        if self.grp_tres or (previous and previous.grp_tres):
            attrs["GrpTRES"] = _tres_limits(self.grp_tres, previous.grp_tres if previous else None)
        if self.grp_tres_mins or (previous and previous.grp_tres_mins):
            attrs["GrpTRESMins"] = _tres_limits(
                self.grp_tres_mins, previous.grp_tres_mins if previous else None
            )
        return attrs

    def matches(self, a: Association) -> bool:
        return (
            a.parent == self.parent
            and dict(a.grp_tres.counts) == dict(self.grp_tres)
            and dict(a.grp_tres_mins.counts) == dict(self.grp_tres_mins)
        )


@dataclass(frozen=True, slots=True)
class UserSpec:
    name: str
    account: str
    qos: tuple[str, ...] = ("normal",)
    default_qos: str = "normal"

    def attributes(self, *, new: bool) -> dict[str, str]:
        attrs = {"QOS": ",".join(self.qos), "DefaultQOS": self.default_qos}
        if new:
            attrs = {"Account": self.account, **attrs}
        return attrs

    def matches(self, a: Association) -> bool:
        return set(a.qos) == set(self.qos) and a.default_qos == self.default_qos


CLEAR = "''"  # sacctmgr's way to reset a list attribute to its default


def _tres_limits(wanted: Mapping[str, int], previous: Mapping[str, int] | Tres | None) -> str:
    """``gres/gpu=4,cpu=-1``: a limit that is no longer wanted is cleared with ``-1``."""
    items = dict(wanted)
    for name in previous or {}:
        items.setdefault(name, -1)
    return ",".join(f"{k}={v}" for k, v in sorted(items.items())) or CLEAR
