"""The tables of alert rules: the rules and channels the portal defines, each rule's state
per subject (pending, firing) and every delivery attempt.

Rules and channels from the YAML file are not stored here (the file is their source); their
states and deliveries are, with the rule's scope copied onto each row so the portal can show
a tenant admin the rows of their own tenants without reading the file.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, Float, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from accounting.db import Base
from dbtypes import UTCDateTime, utcnow


class _Saved:
    """A named document the portal saved for a scope (a rule or a channel)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    scope_level: Mapped[str] = mapped_column(String(16))
    scope_name: Mapped[str] = mapped_column(String(64), default="")
    document: Mapped[dict[str, object]] = mapped_column(JSON)
    created_by: Mapped[str] = mapped_column(String(64), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class AlertRuleRow(_Saved, Base):
    """A rule as the portal saved it: its document (:mod:`accounting.alert_rules`)."""

    __tablename__ = "acct_alert_rules"


class AlertChannelRow(_Saved, Base):
    """A channel as the portal saved it; ``document`` holds its URL and secret, which the
    portal never shows back in full."""

    __tablename__ = "acct_alert_channels"


class AlertState(Base):
    """Where a rule stands for one subject: ``pending`` while its condition holds for less
    than the rule's duration, ``firing`` once the firing message went out. No row: ok."""

    __tablename__ = "acct_alert_states"
    __table_args__ = (UniqueConstraint("rule", "subject"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rule: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(128))
    scope_level: Mapped[str] = mapped_column(String(16))
    scope_name: Mapped[str] = mapped_column(String(64), default="")
    state: Mapped[str] = mapped_column(String(16))
    since: Mapped[datetime] = mapped_column(UTCDateTime())
    fired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    value: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class AlertDelivery(Base):
    """One attempt to deliver a firing or recovery message through one channel."""

    __tablename__ = "acct_alert_deliveries"
    __table_args__ = (Index("ix_acct_alert_deliveries_at", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    rule: Mapped[str] = mapped_column(String(64))
    subject: Mapped[str] = mapped_column(String(128))
    scope_level: Mapped[str] = mapped_column(String(16))
    scope_name: Mapped[str] = mapped_column(String(64), default="")
    channel: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(8))
    attempt: Mapped[int] = mapped_column(Integer)
    ok: Mapped[bool] = mapped_column(Boolean)
    http_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str] = mapped_column(String(512), default="")
    at: Mapped[datetime] = mapped_column(UTCDateTime())


ALERT_TABLES = [
    AlertRuleRow.__table__,
    AlertChannelRow.__table__,
    AlertState.__table__,
    AlertDelivery.__table__,
]
