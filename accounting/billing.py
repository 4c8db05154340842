"""Billing (Decimal money): monthly bills from the rollups, top-ups, balances, history.

A bill prices a tenant's month: GPU and NPU card-hours per model, CPU-hours and memory
GiB-hours at the plan's pay-as-you-go rates (a model without its own rate takes the plan's
``""`` rate for the resource), less the card-hours its package includes (the dearest hours
are covered first), plus the package fee and storage. Posting a bill debits the balance in
the same transaction; a month is billed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from accounting.billing_models import (
    Bill,
    BillingAccount,
    BillLine,
    LedgerEntry,
    Package,
    Price,
    PricePlan,
)
from accounting.models import UCS_PER_CARD_HOUR, Rollup
from accounting.report import month_start, next_month
from translations import N_, Message

CENT = Decimal("0.01")
HOURS = Decimal("0.0001")


class BillingError(ValueError):
    """A billing request that cannot be done; ``message`` says why in any language."""

    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message


def _refuse(msgid: str, **params: object) -> BillingError:
    return BillingError(Message.of(msgid, **params))


@dataclass(frozen=True, slots=True)
class Line:
    """A bill line: ``description`` in English; ``item`` (``package``, ``gpu``, ``npu``,
    ``cpu``, ``mem``, ``storage``), ``model`` (a card model, or the package's name) and
    ``in_package`` say what it is, for a reader's language (:func:`accounting.labels.item`)."""

    description: str
    quantity: Decimal
    unit_price: Decimal
    amount: Decimal
    item: str = ""
    model: str = ""
    in_package: bool = False


def _money(x: Decimal) -> Decimal:
    return x.quantize(CENT, rounding=ROUND_HALF_EVEN)


def account_of(session: Session, tenant: str) -> BillingAccount:
    acct = session.scalar(select(BillingAccount).where(BillingAccount.tenant == tenant))
    if acct is None:
        raise _refuse(N_("%(tenant)s has no billing account."), tenant=tenant)
    return acct


def plan_of(session: Session, acct: BillingAccount) -> PricePlan:
    """The account's price plan (the foreign key keeps it; a row gone meanwhile is an error)."""
    plan = session.get(PricePlan, acct.plan_id)
    if plan is None:
        gone = N_("%(tenant)s is on a price plan that no longer exists.")
        raise _refuse(gone, tenant=acct.tenant)
    return plan


def _usage(
    session: Session, tenant: str, month: datetime, user: str | None = None
) -> list[tuple[str, str, int, int, int, int]]:
    """Month rollups of a tenant (a project account, or a domain: all its projects); with
    ``user``, only that user's jobs."""
    q = (
        select(
            Rollup.gpu_type,
            Rollup.npu_type,
            func.sum(Rollup.gpu_ucs),
            func.sum(Rollup.npu_ucs),
            func.sum(Rollup.cpu_s),
            func.sum(Rollup.mem_mib_s),
        )
        .where(
            Rollup.period == "month",
            Rollup.start == month,
            or_(Rollup.account == tenant, Rollup.domain == tenant),
        )
        .group_by(Rollup.gpu_type, Rollup.npu_type)
    )
    if user is not None:
        q = q.where(Rollup.user == user)
    return [
        (g, n, int(a or 0), int(b or 0), int(c or 0), int(d or 0))
        for g, n, a, b, c, d in session.execute(q)
    ]


def _rate(rates: dict[tuple[str, str], Decimal], resource: str, model: str) -> Decimal:
    rate = rates.get((resource, model), rates.get((resource, "")))
    if rate is None:
        what = f"{resource}:{model}" if model else resource
        raise _refuse(N_("The price plan has no rate for %(what)s."), what=what)
    return rate


def price_month(
    session: Session, acct: BillingAccount, month: datetime, *, user: str | None = None
) -> list[Line]:
    """The bill's lines for ``month`` (pure reading; nothing is written); for the month under
    way, its charges so far. With ``user``: that user's share, their jobs at the plan's
    pay-as-you-go rates (the package, its included hours and storage are the tenant's)."""
    plan = plan_of(session, acct)
    rates = {
        (p.resource, p.model): p.rate
        for p in session.scalars(select(Price).where(Price.plan_id == plan.id))
    }
    hours: dict[tuple[str, str], Decimal] = {}
    cpu_s = mem_s = 0
    for gpu_type, npu_type, gpu, npu, cpu, mem in _usage(session, acct.tenant, month, user):
        for resource, model, ucs in (("gpu", gpu_type, gpu), ("npu", npu_type, npu)):
            if ucs:
                hours[(resource, model)] = (
                    hours.get((resource, model), Decimal(0)) + Decimal(ucs) / UCS_PER_CARD_HOUR
                )
        cpu_s += cpu
        mem_s += mem
    lines: list[Line] = []
    package = session.get(Package, acct.package_id) if acct.package_id and user is None else None
    left = package.included_card_hours if package else Decimal(0)
    if package:
        fee = package.monthly_fee
        lines.append(Line(f"package {package.name}", Decimal(1), fee, fee, "package", package.name))
    cards = sorted(hours.items(), key=lambda kv: -_rate(rates, *kv[0]))
    for (resource, model), exact in cards:
        rate = _rate(rates, resource, model)
        used = exact.quantize(HOURS)
        covered = min(used, left)
        left -= covered
        name = f"{resource.upper()} card-hours{f' ({model})' if model else ''}"
        if covered:
            zero = Decimal(0)
            lines.append(Line(f"{name}, in package", covered, zero, zero, resource, model, True))
        if used - covered:
            amount = _money((used - covered) * rate)
            lines.append(Line(name, used - covered, rate, amount, resource, model))
    for resource, seconds, unit, name in (
        ("cpu", cpu_s, 3600, "CPU-hours"),
        ("mem", mem_s, 3600 * 1024, "memory GiB-hours"),
    ):
        per_hour = rates.get((resource, ""))
        if seconds and per_hour is not None:
            qty = (Decimal(seconds) / unit).quantize(HOURS)
            lines.append(Line(name, qty, per_hour, _money(qty * per_hour), resource))
    if acct.storage_gib and plan.storage_price and user is None:
        lines.append(
            Line(
                "storage GiB-months",
                acct.storage_gib,
                plan.storage_price,
                _money(acct.storage_gib * plan.storage_price),
                "storage",
            )
        )
    return lines


def money_left(session: Session, now: datetime) -> dict[str, Decimal]:
    """Each billing account's money left now: its balance less the month under way's charges
    so far (what its bill would take if posted now). An account whose month cannot be priced
    (a rate missing) is left out; the bill will say why."""
    month = month_start(now)
    left: dict[str, Decimal] = {}
    for acct in session.scalars(select(BillingAccount).order_by(BillingAccount.tenant)):
        try:
            charges = sum((ln.amount for ln in price_month(session, acct, month)), Decimal(0))
        except BillingError:
            continue
        left[acct.tenant] = acct.balance - charges
    return left


def check_in_effect(plan: PricePlan, month: datetime) -> None:
    """A month is billed on a plan only if it overlaps the days the plan is in effect."""
    first, last = month.date(), (next_month(month) - timedelta(days=1)).date()
    if (plan.effective_from and last < plan.effective_from) or (
        plan.effective_until and first > plan.effective_until
    ):
        raise _refuse(
            N_("%(month)s is outside the days the price plan %(plan)s is in effect (%(days)s)."),
            month=f"{month:%Y-%m}",
            plan=plan.name,
            days=f"{plan.effective_from or '…'} / {plan.effective_until or '…'}",
        )


def post_bill(
    session: Session,
    tenant: str,
    month: datetime,
    actor: str = "",
    now: datetime | None = None,
) -> Bill:
    """Bill ``tenant`` for the month containing ``month`` and debit its balance (one
    transaction); a month already billed, or not over yet, is refused."""
    start = month_start(month.astimezone(UTC))
    if start >= month_start(now or datetime.now(UTC)):
        raise _refuse(N_("%(month)s is not over yet."), month=f"{start:%Y-%m}")
    acct = account_of(session, tenant)
    plan = plan_of(session, acct)
    check_in_effect(plan, start)
    lines = price_month(session, acct, start)
    total = sum((ln.amount for ln in lines), Decimal(0))
    bill = Bill(account_id=acct.id, month=start, currency=plan.currency, total=total)
    session.add(bill)
    try:
        session.flush()
    except IntegrityError as exc:
        session.rollback()
        raise _refuse(
            N_("%(tenant)s is already billed for %(month)s."), tenant=tenant, month=f"{start:%Y-%m}"
        ) from exc
    session.add_all(
        BillLine(
            bill_id=bill.id,
            description=ln.description,
            item=ln.item,
            model=ln.model,
            in_package=ln.in_package,
            quantity=ln.quantity,
            unit_price=ln.unit_price,
            amount=ln.amount,
        )
        for ln in lines
    )
    _move(
        session,
        acct,
        kind="bill",
        amount=-total,
        note="",  # the bill says which month; notes are what people write
        actor=actor,
        bill_id=bill.id,
    )
    session.commit()
    return bill


def top_up(session: Session, tenant: str, amount: Decimal, actor: str, note: str = "") -> Decimal:
    """Credit a tenant's balance (a virtual top-up by an operator); returns the new balance."""
    if not isinstance(amount, Decimal) or not amount.is_finite() or amount <= 0:
        raise _refuse(N_("A top-up must be a positive amount, not %(amount)s."), amount=amount)
    if amount != amount.quantize(CENT):
        raise _refuse(N_("%(amount)s has more than 2 decimal places."), amount=amount)
    acct = account_of(session, tenant)
    _move(session, acct, kind="topup", amount=amount, note=note, actor=actor, bill_id=None)
    session.commit()
    return acct.balance


def _move(
    session: Session,
    acct: BillingAccount,
    *,
    kind: str,
    amount: Decimal,
    note: str,
    actor: str,
    bill_id: int | None,
) -> None:
    acct.balance = acct.balance + amount
    session.add(
        LedgerEntry(
            account_id=acct.id,
            kind=kind,
            amount=amount,
            balance_after=acct.balance,
            note=note[:255],
            actor=actor[:64],
            bill_id=bill_id,
        )
    )


def history(session: Session, tenant: str) -> list[LedgerEntry]:
    """Income and expense of a tenant, newest first."""
    acct = account_of(session, tenant)
    return list(
        session.scalars(
            select(LedgerEntry)
            .where(LedgerEntry.account_id == acct.id)
            .order_by(LedgerEntry.id.desc())
        )
    )
