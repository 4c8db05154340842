"""The period a usage page shows: a day, a week, a month or the reader's own first and last day,
in the site's time zone (``TIMEZONE``), with the periods before and after it.

Accounting keeps hourly rollups, so any whole hour can start or end a period: a day is the
reader's day, not UTC's (a zone whose offset is not whole hours starts at the hour before).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from portal.errors import ValidationFailed
from portal.i18n import gettext, lazy_gettext

#: the longest own period a page shows
LONGEST = timedelta(days=366)


class Window(StrEnum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    CUSTOM = "custom"


LABELS = {
    Window.DAY: lazy_gettext("Day"),
    Window.WEEK: lazy_gettext("Week"),
    Window.MONTH: lazy_gettext("Month"),
    Window.CUSTOM: lazy_gettext("Own period"),
}


@dataclass(frozen=True, slots=True)
class Span:
    """A period: its kind, first and last day (in the site's zone) and its UTC bounds."""

    window: Window
    first: date
    last: date
    start: datetime
    end: datetime

    def args(self) -> dict[str, str]:
        """The query that shows this period again (for links and the form)."""
        if self.window is Window.CUSTOM:
            first, last = self.first.isoformat(), self.last.isoformat()
            return {"window": "custom", "first": first, "last": last}
        return {"window": self.window.value, "day": self.first.isoformat()}

    def api_args(self) -> dict[str, str]:
        """The same period as the API takes it (``from`` and ``to``, UTC)."""
        return {"from": _iso(self.start), "to": _iso(self.end)}

    def shifted(self, zone: tzinfo, direction: int) -> Span | None:
        """The period before (-1) or after (+1) of the same kind; none for an own period."""
        if self.window is Window.CUSTOM:
            return None
        if self.window is Window.MONTH:
            month = self.first.month - 1 + direction
            day = date(self.first.year + month // 12, month % 12 + 1, 1)
        else:
            day = self.first + (self.last - self.first + timedelta(days=1)) * direction
        return span(self.window, day, zone=zone)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bound(day: date, zone: tzinfo) -> datetime:
    """Midnight of ``day`` in ``zone``, as a whole UTC hour."""
    local = datetime.combine(day, time(0), tzinfo=zone)
    return local.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def span(
    window: Window,
    day: date,
    last: date | None = None,
    *,
    zone: tzinfo,
) -> Span:
    """The period of ``window`` that holds ``day`` (an own period: ``day`` to ``last``)."""
    if window is Window.DAY:
        first, final = day, day
    elif window is Window.WEEK:
        first = day - timedelta(days=day.weekday())  # weeks start on Monday
        final = first + timedelta(days=6)
    elif window is Window.MONTH:
        first = day.replace(day=1)
        final = (first.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    else:
        first, final = day, last or day
    return Span(window, first, final, _bound(first, zone), _bound(final + timedelta(days=1), zone))


def from_query(args: dict[str, Any], *, zone: tzinfo, today: date) -> Span:
    """The period a page's query asks for (validated by :class:`~portal.usage.schemas.
    WindowQuerySchema`): the current month when it names none."""
    window = Window(args.get("window") or "month")
    if args.get("month") and window is Window.MONTH:
        year, month = (int(x) for x in str(args["month"]).split("-"))
        return span(window, date(year, month, 1), zone=zone)
    if window is not Window.CUSTOM:
        return span(window, args.get("day") or today, zone=zone)
    first, last = args.get("first"), args.get("last")
    if first is None or last is None:
        missing = "first" if first is None else "last"
        raise ValidationFailed({missing: [gettext("Give the first and the last day.")]})
    if last < first:
        raise ValidationFailed({"last": [gettext("The last day may not be before the first day.")]})
    if last - first >= LONGEST:
        raise ValidationFailed({"last": [gettext("At most 366 days at a time.")]})
    return span(window, first, last, zone=zone)
