"""The energy table: what each job's cards drew on each node, integrated from the node agent's
power samples (:mod:`accounting.energy`).

One row per job and node, so that importing the samples again continues from the last one it
read: the node agent trims old samples, and energy already counted must not shrink with them.
Energy is in joules (an integer, exact in sums); a kWh is 3.6 million of them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from accounting.db import Base
from dbtypes import UTCDateTime, utcnow

J_PER_KWH = 3_600_000


class EnergyRecord(Base):
    """A job's cards on one node: joules so far, and the last sample they were counted to."""

    __tablename__ = "acct_energy"
    __table_args__ = (
        UniqueConstraint("cluster", "job_id", "node"),
        Index("ix_acct_energy_job", "cluster", "job_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[int] = mapped_column(BigInteger)
    node: Mapped[str] = mapped_column(String(64))
    energy_j: Mapped[int] = mapped_column(BigInteger, default=0)
    samples: Mapped[int] = mapped_column(Integer, default=0)
    first_ts: Mapped[float] = mapped_column(Float)
    last_ts: Mapped[float] = mapped_column(Float)
    last_w: Mapped[float] = mapped_column(Float)
    #: ``measured`` (NVML, npu-smi) or ``fake`` (the lab's device files draw nothing)
    source: Mapped[str] = mapped_column(String(16), default="measured")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


ENERGY_TABLES = [EnergyRecord.__table__]
