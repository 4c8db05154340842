"""What reports, bills and e-mails call things, and how they write numbers, money and dates,
in the reader's language (``zh_CN`` or ``en``; :mod:`translations`).

Accounting imports no Flask: the labels are marked with :func:`~translations.N_` here and
translated where the reader is known, by the caller's ``locale``.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import cache

from babel import Locale
from babel.dates import format_skeleton
from babel.numbers import format_currency, format_decimal, format_percent

from accounting.report import Dim
from translations import N_, gettext, normalise

#: what a report groups by, as its first column is headed
DIMS: dict[Dim, str] = {
    Dim.DOMAIN: N_("Domain"),
    Dim.PROJECT: N_("Project"),
    Dim.USER: N_("User"),
    Dim.GPU_TYPE: N_("GPU model"),
    Dim.NPU_TYPE: N_("NPU model"),
    Dim.POOL: N_("Pool"),
    Dim.CLUSTER: N_("Cluster"),
}
#: the amounts of a report line (:class:`accounting.report.Line`), by attribute
COLUMNS: dict[str, str] = {
    "jobs": N_("Jobs"),
    "gpu_card_hours": N_("GPU card-hours"),
    "npu_card_hours": N_("NPU card-hours"),
    "cpu_hours": N_("CPU core-hours"),
    "mem_gib_hours": N_("Memory GiB-hours"),
    "avg_wait_min": N_("Average wait (minutes)"),
}
#: the pool utilisation table
UTILISATION: dict[str, str] = {
    "pool": N_("Pool"),
    "gpu_cards": N_("GPU cards"),
    "npu_cards": N_("NPU cards"),
    "gpu_card_hours": N_("GPU card-hours"),
    "npu_card_hours": N_("NPU card-hours"),
    "ratio": N_("Allocated share of card-hours"),
}
TOTAL = N_("Total")
NONE = N_("(none)")


def label(locale: str | None, text: str) -> str:
    return gettext(locale, text)


def dim(locale: str | None, d: Dim) -> str:
    return gettext(locale, DIMS[d])


@cache
def _babel(locale: str | None) -> Locale:
    return Locale.parse(normalise(locale))


def number(value: Decimal | float | int, locale: str | None, digits: int = 2) -> str:
    """A number with the locale's separators and ``digits`` decimals."""
    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return str(format_decimal(value, format=pattern, locale=_babel(locale)))


def percent(ratio: Decimal | float, locale: str | None, digits: int = 1) -> str:
    pattern = "#,##0" + ("." + "0" * digits if digits else "") + "%"
    return str(format_percent(ratio, format=pattern, locale=_babel(locale)))


def money(amount: Decimal, locale: str | None, currency: str = "CNY") -> str:
    """An amount the locale's way: ``¥1,234.50`` in Chinese, ``CN¥1,234.50`` in English."""
    return str(format_currency(amount, currency, locale=_babel(locale)))


def when(t: datetime, locale: str | None, zone: tzinfo = UTC) -> str:
    """A date the locale's way and a 24-hour time, in ``zone`` (``2026/11/1 08:00``)."""
    local = t.astimezone(zone)
    return f"{format_skeleton('yMd', local, locale=_babel(locale))} {local:%H:%M}"


def month(t: datetime, locale: str | None) -> str:
    """A calendar month the locale's way (``2026年11月``, ``Nov 2026``)."""
    return str(format_skeleton("yMMM", t, locale=_babel(locale)))


#: what a bill line is, by its ``item`` (:class:`accounting.billing.Line`)
ITEMS: dict[str, str] = {
    "gpu": N_("GPU card-hours"),
    "npu": N_("NPU card-hours"),
    "cpu": N_("CPU core-hours"),
    "mem": N_("Memory GiB-hours"),
    "storage": N_("Storage GiB-months"),
}
_ITEM_MODEL = N_("%(item)s (%(model)s)")
_IN_PACKAGE = N_("%(item)s, in the package")
_PACKAGE = N_("Package %(name)s (monthly fee)")


def item(locale: str | None, line: object) -> str:
    """A bill line named in ``locale``, from what it is (``item``, ``model``, ``in_package``);
    a line of a bill posted before lines said so keeps its stored English ``description``."""
    kind = str(getattr(line, "item", "") or "")
    model = str(getattr(line, "model", "") or "")
    if kind == "package":
        return gettext(locale, _PACKAGE, name=model)
    if kind not in ITEMS:
        return str(getattr(line, "description", ""))
    text = gettext(locale, ITEMS[kind])
    if model:
        text = gettext(locale, _ITEM_MODEL, item=text, model=model)
    return gettext(locale, _IN_PACKAGE, item=text) if getattr(line, "in_package", False) else text
