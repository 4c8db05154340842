"""Retention: raw job rows are kept for ``keep_days`` (180 by default), hourly rollups longer,
daily and monthly rollups for good. Reports read rollups, so purging raw rows changes no total.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete

from accounting.models import Rollup, UsageRecord

DEFAULT_KEEP_DAYS = 180
DEFAULT_KEEP_HOURLY_DAYS = 400


@dataclass(frozen=True, slots=True)
class Retention:
    keep_days: int = DEFAULT_KEEP_DAYS
    keep_hourly_days: int = DEFAULT_KEEP_HOURLY_DAYS

    def __post_init__(self) -> None:
        if self.keep_days < 1:
            raise ValueError(f"keep_days must be at least 1, not {self.keep_days}")
        if self.keep_hourly_days < self.keep_days:
            raise ValueError(
                f"hourly rollups ({self.keep_hourly_days} days) must be kept at least as long "
                f"as raw rows ({self.keep_days} days)"
            )

    def horizon(self, now: datetime) -> datetime:
        """Jobs that ended before this may have been purged: an import must skip them."""
        return now - timedelta(days=self.keep_days)


@dataclass(frozen=True, slots=True)
class Purged:
    usage_rows: int
    hourly_rollups: int


def purge(engine: Engine, now: datetime, retention: Retention = Retention()) -> Purged:
    """Delete finished job rows and hourly rollups past their retention, in one transaction."""
    with engine.begin() as conn:
        rows = conn.execute(
            delete(UsageRecord).where(
                UsageRecord.finished.is_(True), UsageRecord.end_time < retention.horizon(now)
            )
        ).rowcount
        hourly = conn.execute(
            delete(Rollup).where(
                Rollup.period == "hour",
                Rollup.start < now - timedelta(days=retention.keep_hourly_days),
            )
        ).rowcount
    return Purged(rows, hourly)
