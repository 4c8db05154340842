"""The usage tables: one row per metered job, and hourly / daily / monthly rollups.

They are plain SQLAlchemy models on accounting's own declarative base
(:class:`accounting.db.Base`), migrated by accounting's own Alembic history
(``accounting/migrations``); the CLI, the scheduler, the benchmark and the portal use them with
a bare :class:`sqlalchemy.orm.Session`.

Amounts are integers, so sums are exact on every backend: GPU and NPU use in micro-card-seconds
(a shard of a 32-shard card is 31,250 micro-cards), CPU use in CPU-seconds, memory in
MiB-seconds, waits in seconds.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from accounting.db import Base
from dbtypes import UTCDateTime, utcnow

#: micro-card-seconds in one card-hour
UCS_PER_CARD_HOUR = 3_600_000_000


class UsageRecord(Base):
    """One job (or job step) as metered from ``sacct``; re-imports update it in place."""

    __tablename__ = "acct_usage"
    __table_args__ = (
        UniqueConstraint("cluster", "job_id", "step"),
        Index("ix_acct_usage_end_time", "end_time"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cluster: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[int] = mapped_column(BigInteger)
    step: Mapped[str] = mapped_column(String(32), default="")
    user: Mapped[str] = mapped_column(String(64))
    account: Mapped[str] = mapped_column(String(64))
    domain: Mapped[str] = mapped_column(String(64))
    partition: Mapped[str] = mapped_column(String(64))
    qos: Mapped[str] = mapped_column(String(64), default="")
    state: Mapped[str] = mapped_column(String(16))
    submit_time: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    start_time: Mapped[datetime] = mapped_column(UTCDateTime())
    end_time: Mapped[datetime] = mapped_column(UTCDateTime())
    elapsed_s: Mapped[int] = mapped_column(BigInteger)
    wait_s: Mapped[int] = mapped_column(BigInteger)
    gpu_type: Mapped[str] = mapped_column(String(32), default="")
    gpu_ucards: Mapped[int] = mapped_column(BigInteger, default=0)
    gpu_ucs: Mapped[int] = mapped_column(BigInteger, default=0)
    npu_type: Mapped[str] = mapped_column(String(32), default="")
    npu_ucards: Mapped[int] = mapped_column(BigInteger, default=0)
    npu_ucs: Mapped[int] = mapped_column(BigInteger, default=0)
    cpus: Mapped[int] = mapped_column(Integer, default=0)
    cpu_s: Mapped[int] = mapped_column(BigInteger, default=0)
    mem_mib: Mapped[int] = mapped_column(BigInteger, default=0)
    mem_mib_s: Mapped[int] = mapped_column(BigInteger, default=0)
    finished: Mapped[bool] = mapped_column(default=False)
    imported_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Rollup(Base):
    """Usage summed per period (``hour``, ``day``, ``month``, UTC) and attribution key.

    A job's use is split over the periods it ran in; its count and wait time go to the period
    it started in. Reports read only these rows.
    """

    __tablename__ = "acct_rollups"
    __table_args__ = (
        UniqueConstraint(
            "period",
            "start",
            "cluster",
            "user",
            "account",
            "domain",
            "partition",
            "gpu_type",
            "npu_type",
            name="uq_acct_rollups_key",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    period: Mapped[str] = mapped_column(String(8))
    start: Mapped[datetime] = mapped_column(UTCDateTime())
    cluster: Mapped[str] = mapped_column(String(64))
    user: Mapped[str] = mapped_column(String(64))
    account: Mapped[str] = mapped_column(String(64))
    domain: Mapped[str] = mapped_column(String(64))
    partition: Mapped[str] = mapped_column(String(64))
    gpu_type: Mapped[str] = mapped_column(String(32))
    npu_type: Mapped[str] = mapped_column(String(32))
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    wait_s: Mapped[int] = mapped_column(BigInteger, default=0)
    gpu_ucs: Mapped[int] = mapped_column(BigInteger, default=0)
    npu_ucs: Mapped[int] = mapped_column(BigInteger, default=0)
    cpu_s: Mapped[int] = mapped_column(BigInteger, default=0)
    mem_mib_s: Mapped[int] = mapped_column(BigInteger, default=0)


class IngestState(Base):
    """Where the last complete import of a cluster got to (the next one starts before it)."""

    __tablename__ = "acct_ingest_state"

    cluster: Mapped[str] = mapped_column(String(64), primary_key=True)
    imported_until: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class AlertEpisode(Base):
    """An alert condition that holds; the mail goes out when it opens, once per episode."""

    __tablename__ = "acct_alert_episodes"
    __table_args__ = (Index("ix_acct_alert_episodes_open", "kind", "subject", "closed_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(128))
    opened_at: Mapped[datetime] = mapped_column(UTCDateTime())
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    recipients: Mapped[str] = mapped_column(String(1024), default="")


TABLES = [
    UsageRecord.__table__,
    Rollup.__table__,
    IngestState.__table__,
    AlertEpisode.__table__,
]

# the billing tables share the base; importing the usage models registers them too
from accounting.billing_models import BILLING_TABLES  # noqa: E402

TABLES += BILLING_TABLES

from accounting.alert_models import ALERT_TABLES  # noqa: E402

TABLES += ALERT_TABLES

from accounting.energy_models import ENERGY_TABLES  # noqa: E402

TABLES += ENERGY_TABLES

from accounting.power_models import POWER_TABLES  # noqa: E402

TABLES += POWER_TABLES
