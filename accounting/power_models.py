"""The table of elastic nodes' powered-down spans, imported from the power programs' event
log (:mod:`accounting.power`): the energy an always-on pool would have spent on them idle.

One row per node and span start, so that importing the log again only closes the spans that
have ended since; the node's idle watts are kept with the span they were counted at.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from accounting.db import Base
from dbtypes import UTCDateTime, utcnow


class PowerOffSpan(Base):
    """A node powered down from ``start_ts`` until ``end_ts`` (None: it still is)."""

    __tablename__ = "acct_power_off"
    __table_args__ = (
        UniqueConstraint("cluster", "node", "start_ts"),
        Index("ix_acct_power_off_end", "cluster", "end_ts"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(64))
    start_ts: Mapped[float] = mapped_column(Float)
    end_ts: Mapped[float | None] = mapped_column(Float, nullable=True)
    watts: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


POWER_TABLES = [PowerOffSpan.__table__]
