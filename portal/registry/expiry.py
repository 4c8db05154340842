"""Expiry dates on the pages (shares, inference services): typed and shown in the site's time
zone (``TIMEZONE``), kept in UTC.

A share's expiry is typed as a day (``<input type="date">``): access ends at the end of that
day, site time. A service's expiry is a day and time (``datetime-local``)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from flask_babel import get_timezone

from portal.errors import ValidationFailed
from portal.i18n import gettext


def _zone() -> ZoneInfo:
    # Babel hands out a pytz zone, which must not be given to replace(): the name is enough
    return ZoneInfo(str(get_timezone()))


def local_input(value: datetime | None) -> str:
    """``value`` as a ``datetime-local`` input shows it, in the site's time zone."""
    if value is None:
        return ""
    return value.astimezone(_zone()).strftime("%Y-%m-%dT%H:%M")


def parse_local(raw: str, field: str) -> datetime | None:
    """A ``datetime-local`` value (site time) in UTC; empty: none."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        naive = datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationFailed({field: [gettext("Give a date and a time.")]}) from None
    return naive.replace(tzinfo=_zone()).astimezone(UTC)


def end_of_day(raw: str, field: str) -> datetime | None:
    """A ``date`` value as the end of that day, site time, in UTC; empty: none."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        raise ValidationFailed({field: [gettext("Give a date.")]}) from None
    midnight = datetime.combine(day + timedelta(days=1), time(), tzinfo=_zone())
    return midnight.astimezone(UTC)
