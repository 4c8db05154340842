"""Capacity over time: what the control daemon's sampler records for the monitoring charts.

One row per interval and per partition and kind (whole cards with shards and vNPUs as their
fractions, CPUs), and per node and kind of card; minute rows are rolled up into hourly rows as
they age (:mod:`portal.nodes.sampling`). Requests only read these rows.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from portal.extensions import Base
from portal.models import UTCDateTime

PARTITION = "partition"
NODE = "node"


class CapacitySample(Base):
    """Cards (or CPUs) of one partition or node at one moment, and its queue then."""

    __tablename__ = "capacity_samples"
    __table_args__ = (
        # a chart reads one resolution over a time range
        Index("ix_capacity_samples_step_s_at", "step_s", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: the interval the row stands for: the sampler's (60 s) or an hour once rolled up
    step_s: Mapped[int] = mapped_column(Integer)
    cluster: Mapped[str] = mapped_column(String(64))
    scope: Mapped[str] = mapped_column(String(16))  # PARTITION or NODE
    name: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(8))  # gpu, npu (cards) or cpu (cores)
    total: Mapped[float] = mapped_column(Float)
    used: Mapped[float] = mapped_column(Float)
    free: Mapped[float] = mapped_column(Float)
    pending: Mapped[int] = mapped_column(Integer, default=0)
    running: Mapped[int] = mapped_column(Integer, default=0)
    wait_mean_s: Mapped[float] = mapped_column(Float, default=0.0)
    wait_max_s: Mapped[float] = mapped_column(Float, default=0.0)
