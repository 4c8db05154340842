"""Balances, bills and top-ups of billing accounts, with the permission checks.

A billing account's tenant is a domain or a project (by name). Platform admins see and change
every account; a domain admin sees the domain's account and its projects'; a project's
managers (``project.manage``) see the project's, with its bills and ledger. Everyone who may
see a project (``project.read``) sees its balance, this month's charges so far and their own
share of them. Top-ups and posting bills are platform admins' (operators'), and are audited.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from accounting import billing
from accounting.billing_models import Bill, BillingAccount, BillLine, Package, PricePlan
from accounting.report import ReportError, month_start, parse_month
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.clock import now
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import current, gettext
from portal.tenancy.models import Domain, Project

ZERO = Decimal(0)


def domain_of(session: Session, tenant: str) -> int | None:
    domain = session.scalar(select(Domain.id).where(Domain.name == tenant))
    if domain is not None:
        return domain
    return session.scalar(select(Project.domain_id).where(Project.name == tenant))


def _may_manage(session: Session, access: Access, tenant: str) -> bool:
    """Whether the caller sees the account whole: its bills and its ledger."""
    if access.platform_admin:
        return True
    domain_id = domain_of(session, tenant)
    if domain_id is not None and domain_id in access.admin_of:
        return True
    project = session.scalar(select(Project).where(Project.name == tenant))
    return project is not None and Perm.PROJECT_MANAGE in access.on_project(project)


def _may_see(session: Session, access: Access, tenant: str) -> bool:
    """Whether the caller sees the account's balance and this month: its managers, and the
    members of a project's account."""
    if _may_manage(session, access, tenant):
        return True
    project = session.scalar(select(Project).where(Project.name == tenant))
    return project is not None and Perm.PROJECT_READ in access.on_project(project)


def require_account(
    session: Session, access: Access, tenant: str, *, whole: bool = True
) -> BillingAccount:
    """The account, if the caller may see it (``whole``: with its bills and ledger)."""
    acct = session.scalar(select(BillingAccount).where(BillingAccount.tenant == tenant))
    allowed = _may_manage if whole else _may_see
    if acct is None or not allowed(session, access, tenant):
        raise NotFound(gettext("There is no billing account of %(tenant)s.", tenant=tenant))
    return acct


def accounts(session: Session, access: Access) -> list[BillingAccount]:
    rows = session.scalars(select(BillingAccount).order_by(BillingAccount.tenant)).all()
    return [a for a in rows if _may_see(session, access, a.tenant)]


def this_month(session: Session, access: Access, acct: BillingAccount) -> dict[str, Any]:
    """The month under way: its charges so far (what its bill would be now) and the caller's
    share of them (their jobs at the plan's rates); ``why`` says what cannot be priced."""
    month = month_start(now())
    out: dict[str, Any] = {"month": month.strftime("%Y-%m"), "total": None, "mine": None}
    try:
        out["total"] = sum((ln.amount for ln in billing.price_month(session, acct, month)), ZERO)
        mine = billing.price_month(session, acct, month, user=access.username)
        out["mine"] = sum((ln.amount for ln in mine), ZERO)
    except billing.BillingError as exc:
        out["why"] = exc.message.render(current())
    return out


def view(session: Session, access: Access, tenant: str) -> dict[str, Any]:
    """The account as the caller may see it: whole for its managers (``full``), its balance
    and this month for a project's members (no bills, no ledger)."""
    acct = require_account(session, access, tenant, whole=False)
    full = _may_manage(session, access, tenant)
    plan = session.get(PricePlan, acct.plan_id)
    if plan is None:
        raise NotFound(gettext("The price plan of this account no longer exists."))
    package = session.get(Package, acct.package_id) if acct.package_id else None
    return {
        "tenant": acct.tenant,
        "plan": plan.name,
        "currency": plan.currency,
        "package": package.name if package else None,
        "balance": acct.balance,
        "this_month": this_month(session, access, acct),
        "full": full,
        "bills": _bills(session, acct) if full else [],
        "ledger": billing.history(session, acct.tenant) if full else [],
    }


def _bills(session: Session, acct: BillingAccount) -> list[dict[str, Any]]:
    """The account's posted bills, newest first, each with its lines."""
    bills = session.scalars(
        select(Bill).where(Bill.account_id == acct.id).order_by(Bill.month.desc())
    ).all()
    lines = session.scalars(
        select(BillLine).where(BillLine.bill_id.in_([b.id for b in bills])).order_by(BillLine.id)
    ).all()
    return [
        {
            "id": b.id,
            "month": b.month.strftime("%Y-%m"),
            "total": b.total,
            "lines": [ln for ln in lines if ln.bill_id == b.id],
        }
        for b in bills
    ]


def top_up(
    session: Session, access: Access, tenant: str, amount: Decimal, note: str
) -> dict[str, Any]:
    acct = require_account(session, access, tenant)
    access.require_platform_admin()
    before = {"balance": str(acct.balance)}
    record(
        session,
        access.user,
        "billing.topup",
        "billing_account",
        acct.id,
        before=before,
        after={"balance": str(acct.balance + amount), "amount": str(amount), "note": note},
        domain_id=domain_of(session, tenant),
    )
    try:
        billing.top_up(session, tenant, amount, access.username, note)
    except billing.BillingError as exc:
        session.rollback()
        raise ValidationFailed({"amount": [exc.message.render(current())]}) from exc
    return view(session, access, tenant)


def post_bill(session: Session, access: Access, tenant: str, month_text: str) -> dict[str, Any]:
    acct = require_account(session, access, tenant)
    access.require_platform_admin()
    try:
        month, _ = parse_month(month_text)
    except ReportError as exc:
        raise ValidationFailed({"month": [exc.message.render(current())]}) from exc
    record(
        session,
        access.user,
        "billing.bill",
        "billing_account",
        acct.id,
        after={"month": month.strftime("%Y-%m")},
        domain_id=domain_of(session, tenant),
    )
    try:
        billing.post_bill(session, tenant, month, access.username)
    except billing.BillingError as exc:
        # the month is billed already or not over yet, the plan lacks a rate: the state of
        # the account, not the request, is in the way
        session.rollback()
        raise Conflict(exc.message.render(current())) from exc
    return view(session, access, tenant)
