"""Quantities of the quotas page in words, in the reader's language: shares of a card, time
limits, and what each quota column counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from portal.i18n import gettext, ngettext
from translations import N_

#: Each quota column: its heading and the unit it counts in (``%(n)d`` shards per card).
COLUMNS = {
    "gpus": (N_("GPU cards"), N_("whole cards")),
    "shards": (N_("GPU shards"), N_("one shard is 1/%(n)d of a card")),
    "npus": (N_("NPUs"), N_("whole Ascend NPU cards")),
    "cpus": (N_("CPUs"), N_("CPU cores")),
}


def column_heading(name: str) -> str:
    return gettext(COLUMNS[name][0]) if name in COLUMNS else name


def column_unit(name: str, shards_per_card: int) -> str:
    return gettext(COLUMNS[name][1], n=shards_per_card) if name in COLUMNS else ""


def cards(value: float | Fraction | None, shards_per_card: int = 32) -> str:
    """A number of cards in words: ``2 cards``, ``1/4 of a card``, ``1 1/2 cards``."""
    if value is None:
        return gettext("no limit")
    share = Fraction(value).limit_denominator(shards_per_card)
    whole, part = divmod(share.numerator, share.denominator)
    if part == 0:
        return ngettext("%(num)d card", "%(num)d cards", whole)
    fraction = f"{part}/{share.denominator}"
    if whole == 0:
        return gettext("%(share)s of a card", share=fraction)
    return gettext("%(whole)d %(share)s cards", whole=whole, share=fraction)


def minutes(value: int | None) -> str:
    """A time limit in the largest whole unit it is: days, hours or minutes."""
    if value is None:
        return gettext("no limit")
    if value % 1440 == 0:
        return ngettext("%(num)d day", "%(num)d days", value // 1440)
    if value % 60 == 0:
        return ngettext("%(num)d hour", "%(num)d hours", value // 60)
    return ngettext("%(num)d minute", "%(num)d minutes", value)


#: the resources whose guarantee a project is told, with how one counts them
GUARANTEED = {
    "gpu": N_("GPU: %(amount)s"),
    "npu": N_("NPU: %(amount)s"),
}


def guaranteed(nominal: Mapping[str, float], shards_per_card: int) -> list[str]:
    """A guarantee per card kind in words: ``GPU: 4 cards``."""
    return [
        gettext(GUARANTEED[r], amount=cards(nominal[r], shards_per_card))
        for r in GUARANTEED
        if nominal.get(r)
    ]


def borrowing(
    limits: Mapping[str, float], lenders: Sequence[str], unseen: int, shards_per_card: int
) -> str:
    """What a project may use beyond its guarantee, and from whom: the lenders the reader
    may see by name, the others counted."""
    if not lenders and not unseen:
        return gettext("Nothing: jobs beyond the guarantee wait until it has room.")
    others = ngettext("%(num)d other project", "%(num)d other projects", unseen)
    if lenders and unseen:
        whom = gettext("%(names)s and %(others)s", names=", ".join(lenders), others=others)
    else:
        whom = ", ".join(lenders) or others
    capped = [
        gettext(GUARANTEED[r], amount=cards(limits[r], shards_per_card))
        for r in GUARANTEED
        if r in limits
    ]
    if not capped:
        return gettext("Idle quota lent by %(projects)s, while it stays idle.", projects=whom)
    return gettext(
        "Idle quota lent by %(projects)s, while it stays idle, up to %(limits)s more.",
        projects=whom,
        limits="; ".join(capped),
    )
