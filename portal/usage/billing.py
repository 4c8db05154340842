"""Balances, bills and top-ups of billing accounts, with the permission checks.

A billing account's tenant is a domain or a project (by name). Platform admins see and change
every account; a domain admin sees the domain's account and its projects'; a project's
managers (``project.manage``) see the project's. Top-ups and posting bills are platform
admins' (operators'), and are audited.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from accounting import billing
from accounting.billing_models import Bill, BillingAccount, BillLine, Package, PricePlan
from accounting.report import ReportError, parse_month
from portal.audit.service import record
from portal.authz import Access, Perm
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import current, gettext
from portal.tenancy.models import Domain, Project


def domain_of(session: Session, tenant: str) -> int | None:
    domain = session.scalar(select(Domain.id).where(Domain.name == tenant))
    if domain is not None:
        return domain
    return session.scalar(select(Project.domain_id).where(Project.name == tenant))


def _may_read(session: Session, access: Access, tenant: str) -> bool:
    if access.platform_admin:
        return True
    domain_id = domain_of(session, tenant)
    if domain_id is not None and domain_id in access.admin_of:
        return True
    project = session.scalar(select(Project).where(Project.name == tenant))
    return project is not None and Perm.PROJECT_MANAGE in access.on_project(project)


def require_account(session: Session, access: Access, tenant: str) -> BillingAccount:
    acct = session.scalar(select(BillingAccount).where(BillingAccount.tenant == tenant))
    if acct is None or not _may_read(session, access, tenant):
        raise NotFound(gettext("There is no billing account of %(tenant)s.", tenant=tenant))
    return acct


def accounts(session: Session, access: Access) -> list[BillingAccount]:
    rows = session.scalars(select(BillingAccount).order_by(BillingAccount.tenant)).all()
    return [a for a in rows if _may_read(session, access, a.tenant)]


def view(session: Session, access: Access, tenant: str) -> dict[str, Any]:
    acct = require_account(session, access, tenant)
    plan = session.get(PricePlan, acct.plan_id)
    if plan is None:
        raise NotFound(gettext("The price plan of this account no longer exists."))
    package = session.get(Package, acct.package_id) if acct.package_id else None
    bills = session.scalars(
        select(Bill).where(Bill.account_id == acct.id).order_by(Bill.month.desc())
    ).all()
    lines = session.scalars(
        select(BillLine).where(BillLine.bill_id.in_([b.id for b in bills])).order_by(BillLine.id)
    ).all()
    return {
        "tenant": acct.tenant,
        "plan": plan.name,
        "currency": plan.currency,
        "package": package.name if package else None,
        "balance": acct.balance,
        "bills": [
            {
                "id": b.id,
                "month": b.month.strftime("%Y-%m"),
                "total": b.total,
                "lines": [ln for ln in lines if ln.bill_id == b.id],
            }
            for b in bills
        ],
        "ledger": billing.history(session, acct.tenant),
    }


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
