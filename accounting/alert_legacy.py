"""The alert keys that came before rules, read as rules.

* ``tenants: {T: {card_hours, warn_at, recipients}}`` → rule ``budget:T``: card-hours of T
  (a domain or a project) this month as a share of ``card_hours``, ``>= warn_at``, to the
  e-mail channel ``mail:T`` (its ``recipients``);
* ``users: {card_hours: {U: n}, default_card_hours, warn_at}`` → rule ``user_quota``: each
  user's card-hours as a share of their own (else the default) quota, ``>= warn_at``, to
  ``mail:users``, which mails the user;
* ``pools: true`` with ``platform_admins`` → rules ``pool_exhausted:GPU`` and
  ``pool_exhausted:NPU``: a pool's free whole cards ``<= 0``, to ``mail:platform_admins``.

Their firing mails keep the wording they had (their own templates).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accounting.alert_rules import Channel, ChannelType, Level, Query, Rule, Scope


def legacy_rules(c: Mapping[str, Any]) -> tuple[list[Rule], list[Channel]]:
    """Rules and channels for what :class:`accounting.alerts._Config` loaded."""
    rules: list[Rule] = []
    channels: list[Channel] = []
    for tenant, b in sorted(c["tenants"].items()):
        if not b["recipients"]:
            continue
        channel = Channel(f"mail:{tenant}", ChannelType.EMAIL, recipients=tuple(b["recipients"]))
        channels.append(channel)
        rules.append(
            Rule(
                f"budget:{tenant}",
                Query("usage", "card_hours_share", budget=float(b["card_hours"])),
                ">=",
                float(b["warn_at"]),
                (channel.name,),
                scope=Scope(Level.PROJECT, tenant),
                template="tenant_budget",
            )
        )
    users = c["users"]
    if users["card_hours"] or users["default_card_hours"] is not None:
        channels.append(Channel("mail:users", ChannelType.EMAIL, roles=("subject",)))
        default = users["default_card_hours"]
        rules.append(
            Rule(
                "user_quota",
                Query(
                    "usage",
                    "card_hours_share",
                    budget=float(default) if default is not None else None,
                    budgets={u: float(v) for u, v in users["card_hours"].items()},
                ),
                ">=",
                float(users["warn_at"]),
                ("mail:users",),
                scope=Scope(Level.USER),
                template="user_quota",
            )
        )
    if c["pools"] and c["platform_admins"]:
        channels.append(
            Channel(
                "mail:platform_admins",
                ChannelType.EMAIL,
                recipients=tuple(c["platform_admins"]),
            )
        )
        for cards in ("GPU", "NPU"):
            rules.append(
                Rule(
                    f"pool_exhausted:{cards}",
                    Query("usage", "pool_free_cards", cards=cards),
                    "<=",
                    0.0,
                    ("mail:platform_admins",),
                    template="pool_exhausted",
                )
            )
    return rules, channels
