"""Alert rules in words, in the reader's language: what a rule watches, its condition and how
long it must hold (``本月卡时占 500 卡时预算的比例 ≥ 90%，持续 30 分钟``), never the
document's keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from portal.i18n import gettext, ngettext
from portal.quotas.words import minutes
from translations import N_

#: what each usage measure watches, as the builder offers it
MEASURES = {
    "card_hours": N_("Card-hours used this month"),
    "card_hours_share": N_("Share of a card-hour budget used this month"),
    "pool_free_cards": N_("Free cards in a pool (partition)"),
    "balance_left": N_("Money left: the balance less this month's charges so far"),
}
#: comparators as people write them
SIGNS = {">=": "≥", ">": ">", "<=": "≤", "<": "<", "==": "=", "!=": "≠"}
LEVELS = {
    "platform": N_("the whole platform"),
    "domain": N_("a domain"),
    "project": N_("a project"),
    "user": N_("a user"),
}
SEVERITIES = {
    "normal": N_("normal: the first channel that takes it"),
    "urgent": N_("urgent: every channel"),
}


def _number(value: float) -> str:
    return f"{value:g}"


def watched(query: Mapping[str, Any]) -> str:
    """What the rule's query watches."""
    if query.get("kind") == "metric":
        return gettext("the Prometheus query %(query)s", query=query.get("promql", ""))
    measure = query.get("measure", "")
    if measure == "card_hours_share":
        budget = query.get("budget")
        if budget:
            return gettext(
                "the share of a %(budget)s card-hour budget used this month",
                budget=_number(float(budget)),
            )
        return gettext("the share of each one's card-hour budget used this month")
    if measure == "pool_free_cards":
        return gettext("free %(cards)s cards in each pool", cards=query.get("cards", "GPU"))
    if measure == "balance_left":
        return gettext("the money left after this month's charges so far (yuan)")
    return gettext("card-hours used this month")


def held(seconds: int) -> str:
    """How long the condition must hold, in the largest whole unit."""
    if seconds <= 0:
        return gettext("at once")
    if seconds % 60:
        return ngettext("for %(num)d second", "for %(num)d seconds", seconds)
    return gettext("for %(time)s", time=minutes(seconds // 60))


def condition(rule: Mapping[str, Any]) -> str:
    """The whole condition: what, the comparison, the threshold and how long."""
    query = rule.get("query") or {}
    threshold = float(rule.get("threshold", 0))
    shown = (
        f"{threshold * 100:g}%"
        if query.get("measure") == "card_hours_share" and query.get("kind") != "metric"
        else _number(threshold)
    )
    return gettext(
        "%(what)s %(sign)s %(threshold)s, %(held)s",
        what=watched(query),
        sign=SIGNS.get(str(rule.get("comparator")), str(rule.get("comparator"))),
        threshold=shown,
        held=held(int(rule.get("for") or 0)),
    )


#: a rule's scope when it names no one: each of its level
EACH = {
    "platform": N_("the whole platform"),
    "domain": N_("every domain"),
    "project": N_("every project"),
    "user": N_("every user"),
}


def scope(level: str, name: str) -> str:
    """Whom a rule or a channel is about: the one it names, else each of its level."""
    if name:
        return name
    return gettext(EACH[level]) if level in EACH else level


def value(rule: Mapping[str, Any], number: float) -> str:
    """A subject's value as the rule's condition reads it: a budget's share in percent."""
    query = rule.get("query") or {}
    if query.get("measure") == "card_hours_share" and query.get("kind") != "metric":
        return f"{number * 100:g}%"
    return _number(number)
