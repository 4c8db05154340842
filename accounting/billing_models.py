"""Billing tables: price plans, prices, packages, billing accounts, bills and the ledger.

Money is :class:`~decimal.Decimal` in Python and an integer count of micro-units in the
database (:class:`Money`), so it is exact on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import (
    BigInteger,
    Boolean,
    Date,
    ForeignKey,
    Integer,
    String,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Mapped, mapped_column

from accounting.db import Base
from dbtypes import UTCDateTime, utcnow

MICRO = Decimal(1_000_000)


class Money(TypeDecorator[Decimal]):
    """A Decimal with at most 6 places, stored as integer micro-units."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> int | None:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            raise TypeError(f"money must be a Decimal, not {type(value).__name__}")
        micro = value * MICRO
        if micro != micro.to_integral_value():
            raise ValueError(f"{value} has more than 6 decimal places")
        return int(micro)

    def process_result_value(self, value: int | None, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(value) / MICRO


class PricePlan(Base):
    __tablename__ = "acct_price_plans"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    currency: Mapped[str] = mapped_column(String(3), default="CNY")
    #: per GiB of storage per month
    storage_price: Mapped[Decimal] = mapped_column(Money(), default=Decimal(0))
    #: the first and last day the plan bills (either open: no limit); a month outside them is
    #: not billed on it
    effective_from: Mapped[date | None] = mapped_column(Date(), nullable=True, default=None)
    effective_until: Mapped[date | None] = mapped_column(Date(), nullable=True, default=None)


class Price(Base):
    """Pay-as-you-go rate per unit-hour: a card-hour (``gpu``/``npu``, per model or ``""``
    for any), a CPU-hour (``cpu``) or a GiB-hour of memory (``mem``)."""

    __tablename__ = "acct_prices"
    __table_args__ = (UniqueConstraint("plan_id", "resource", "model"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    plan_id: Mapped[int] = mapped_column(ForeignKey("acct_price_plans.id", ondelete="CASCADE"))
    resource: Mapped[str] = mapped_column(String(8))
    model: Mapped[str] = mapped_column(String(32), default="")
    rate: Mapped[Decimal] = mapped_column(Money())


class Package(Base):
    """A monthly package: a fixed fee that includes some GPU and NPU card-hours."""

    __tablename__ = "acct_packages"
    __table_args__ = (UniqueConstraint("plan_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    plan_id: Mapped[int] = mapped_column(ForeignKey("acct_price_plans.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    monthly_fee: Mapped[Decimal] = mapped_column(Money())
    included_card_hours: Mapped[Decimal] = mapped_column(Money())


class BillingAccount(Base):
    """A tenant that pays: a Slurm account (a domain or a project) with its plan and
    balance."""

    __tablename__ = "acct_billing_accounts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant: Mapped[str] = mapped_column(String(64), unique=True)
    plan_id: Mapped[int] = mapped_column(ForeignKey("acct_price_plans.id"))
    package_id: Mapped[int | None] = mapped_column(
        ForeignKey("acct_packages.id", ondelete="SET NULL"), nullable=True
    )
    storage_gib: Mapped[Decimal] = mapped_column(Money(), default=Decimal(0))
    balance: Mapped[Decimal] = mapped_column(Money(), default=Decimal(0))


class Bill(Base):
    __tablename__ = "acct_bills"
    __table_args__ = (UniqueConstraint("account_id", "month"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("acct_billing_accounts.id"))
    month: Mapped[datetime] = mapped_column(UTCDateTime())
    currency: Mapped[str] = mapped_column(String(3))
    total: Mapped[Decimal] = mapped_column(Money())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class BillLine(Base):
    """One line of a bill. ``item``, ``model`` and ``in_package`` say what it is, so that it
    is named in each reader's language; ``description`` is its English (and all that lines
    of bills posted before them have: ``item`` ``""``)."""

    __tablename__ = "acct_bill_lines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bill_id: Mapped[int] = mapped_column(ForeignKey("acct_bills.id", ondelete="CASCADE"))
    description: Mapped[str] = mapped_column(String(128))
    #: ``package``, ``gpu``, ``npu``, ``cpu``, ``mem`` or ``storage``
    item: Mapped[str] = mapped_column(String(16), default="", server_default=text("''"))
    #: the card model of a ``gpu`` or ``npu`` line, the package's name of a ``package`` line
    model: Mapped[str] = mapped_column(String(64), default="", server_default=text("''"))
    in_package: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    quantity: Mapped[Decimal] = mapped_column(Money())
    unit_price: Mapped[Decimal] = mapped_column(Money())
    amount: Mapped[Decimal] = mapped_column(Money())


class LedgerEntry(Base):
    """Income (top-ups, positive) and expense (bills, negative) of a billing account."""

    __tablename__ = "acct_ledger"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("acct_billing_accounts.id"), index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[Decimal] = mapped_column(Money())
    balance_after: Mapped[Decimal] = mapped_column(Money())
    note: Mapped[str] = mapped_column(String(255), default="")
    actor: Mapped[str] = mapped_column(String(64), default="")
    bill_id: Mapped[int | None] = mapped_column(ForeignKey("acct_bills.id"), nullable=True)


BILLING_TABLES = [
    PricePlan.__table__,
    Price.__table__,
    Package.__table__,
    BillingAccount.__table__,
    Bill.__table__,
    BillLine.__table__,
    LedgerEntry.__table__,
]
