"""Price plans and billing accounts in the portal: platform admins only, every change audited
with what it was before and after (in the same transaction as the change).

The plan rules themselves (the document, replacing packages, a package of the account's plan)
are :mod:`accounting.plans`'; this adds who may, the portal's tenants (passed to accounting as
:func:`tenant_check`) and the audit log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from accounting import plans
from accounting.billing_models import BillingAccount, Package, PricePlan
from accounting.plan_schema import PlanSpec
from portal.audit.service import record
from portal.authz import Access
from portal.errors import Conflict, NotFound, ValidationFailed
from portal.i18n import current, gettext, translate_message
from portal.tenancy.models import Domain, Project
from portal.usage import billing
from translations import Message


def tenant_check(session: Session) -> plans.TenantCheck:
    """Accounting's tenant check for the portal: a domain or a project by that name."""

    def exists(tenant: str) -> bool:
        return (
            session.scalar(select(Domain.id).where(Domain.name == tenant)) is not None
            or session.scalar(select(Project.id).where(Project.name == tenant)) is not None
        )

    return exists


def localised(errors: Mapping[str, Sequence[object]]) -> dict[str, list[str]]:
    """Accounting's field errors (sentences, marked texts, marshmallow's own) in the reader's
    language."""
    return {path: [_text(m) for m in messages] for path, messages in errors.items()}


def _text(message: object) -> str:
    if isinstance(message, Message):
        return message.render(current())
    return translate_message(str(message))


def _refusal(exc: plans.PlanError) -> NotFound | ValidationFailed:
    """A change naming a plan or tenant that does not exist is 404; any other problem 422."""
    errors = localised(exc.errors)
    if isinstance(exc, plans.UnknownName):
        return NotFound("; ".join(m for ms in errors.values() for m in ms))
    return ValidationFailed(errors)


def plan_list(session: Session, access: Access) -> list[dict[str, Any]]:
    """Every plan as its document, with the tenants billed on it."""
    access.require_platform_admin()
    tenants = plans.accounts_by_plan(session)
    return [
        {**plans.plan_document(session, name), "accounts": tenants.get(name, [])}
        for name in plans.plan_names(session)
    ]


def plan(session: Session, access: Access, name: str) -> dict[str, Any]:
    access.require_platform_admin()
    try:
        doc = plans.plan_document(session, name)
    except plans.NotFoundError as exc:
        raise NotFound(gettext("There is no price plan named %(name)s.", name=name)) from exc
    return {**doc, "accounts": plans.accounts_by_plan(session).get(name, [])}


def plan_etag_data(session: Session, name: str, *, lock: bool = False) -> dict[str, Any] | None:
    """What a plan's ETag is computed from: its document, or None while no plan has that
    name. ``lock`` holds the plan's row until the transaction ends, so that a version check
    and the write after it see the same plan."""
    row = select(PricePlan.id).where(PricePlan.name == name)
    if session.scalar(row.with_for_update() if lock else row) is None:
        return None
    return plans.plan_document(session, name)


def put_plan(session: Session, access: Access, name: str, spec: PlanSpec) -> dict[str, Any]:
    """Create or replace the plan ``name`` with the validated document ``spec``."""
    access.require_platform_admin()
    if spec.name != name:
        wrong = gettext("Must be the plan's name in the address, %(name)s.", name=name)
        raise ValidationFailed({"name": [wrong]})
    try:
        before: dict[str, Any] | None = plans.plan_document(session, name)
    except plans.NotFoundError:
        before = None
    try:
        applied = plans.apply_plan(session, spec, commit=False)
    except plans.PlanError as exc:
        session.rollback()
        raise _refusal(exc) from exc
    record(
        session,
        access.user,
        "billing.plan",
        "price_plan",
        applied.id,
        before=before,
        after=spec.document(),
    )
    session.commit()
    return plan(session, access, name)


def apply_text(
    session: Session, access: Access, text: str, check: Callable[[str], None] | None = None
) -> str:
    """The advanced editor: a YAML or JSON document, applied under the name it gives, once
    ``check`` (given that name) raised nothing."""
    access.require_platform_admin()
    try:
        spec = plans.parse_plan(text)
    except plans.PlanError as exc:
        raise _refusal(exc) from exc
    return _apply(session, access, spec, check)


def apply_document(
    session: Session,
    access: Access,
    doc: Mapping[str, Any],
    check: Callable[[str], None] | None = None,
) -> str:
    """The plan form: the document it makes, applied as :func:`apply_text` applies text."""
    access.require_platform_admin()
    try:
        spec = plans.load_plan(doc)
    except plans.PlanError as exc:
        raise _refusal(exc) from exc
    return _apply(session, access, spec, check)


def _apply(
    session: Session, access: Access, spec: PlanSpec, check: Callable[[str], None] | None
) -> str:
    if check is not None:
        check(spec.name)
    put_plan(session, access, spec.name, spec)
    return spec.name


def open_account(
    session: Session, access: Access, tenant: str, plan_name: str, package: str | None
) -> dict[str, Any]:
    """A billing account for a domain or project of the portal."""
    access.require_platform_admin()
    try:
        acct = plans.open_account(
            session,
            tenant,
            plan_name,
            package,
            tenant_exists=tenant_check(session),
            commit=False,
        )
    except plans.PlanError as exc:
        session.rollback()
        raise _refusal(exc) from exc
    except plans.AccountExists as exc:
        session.rollback()
        raise Conflict(exc.message.render(current())) from exc
    record(
        session,
        access.user,
        "billing.account_open",
        "billing_account",
        acct.id,
        after=plans.account_settings(session, tenant),
        domain_id=billing.domain_of(session, tenant),
    )
    session.commit()
    return billing.view(session, access, tenant)


def change_account(
    session: Session, access: Access, tenant: str, changes: dict[str, Any]
) -> dict[str, Any]:
    """Another plan and/or package (``package: null`` for none); what is left out stays."""
    acct = billing.require_account(session, access, tenant)
    access.require_platform_admin()
    before = plans.account_settings(session, tenant)
    try:
        plans.change_account(
            session,
            tenant,
            changes.get("plan"),
            changes.get("package", plans.KEEP),
            commit=False,
        )
    except plans.PlanError as exc:
        session.rollback()
        raise _refusal(exc) from exc
    record(
        session,
        access.user,
        "billing.account_change",
        "billing_account",
        acct.id,
        before=before,
        after=plans.account_settings(session, tenant),
        domain_id=billing.domain_of(session, tenant),
    )
    session.commit()
    return billing.view(session, access, tenant)


STARTER = """\
name: new-plan
currency: CNY
storage_price: "0.10"      # per GiB-month; money as quoted decimals, never floats
prices:
  - {resource: gpu, model: a100, rate: "12.00"}   # per card-hour
  - {resource: gpu, rate: "8.00"}                 # any other GPU model
  - {resource: npu, rate: "9.00"}
  - {resource: cpu, rate: "0.05"}                 # per CPU-hour
  - {resource: mem, rate: "0.01"}                 # per GiB-hour
packages:
  - {name: lab-100, monthly_fee: "900", included_card_hours: "100"}
"""


def editor_text(session: Session, access: Access, name: str | None) -> str:
    """What the page's editor starts from: the plan as YAML, or a starter document."""
    if not name:
        access.require_platform_admin()
        return STARTER
    doc = plan(session, access, name)
    doc.pop("accounts")
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def account_choices(session: Session, access: Access) -> dict[str, list[str]]:
    """For the page's form: tenants without an account, plans, and every package name."""
    access.require_platform_admin()
    billed = set(session.scalars(select(BillingAccount.tenant)))
    tenants = sorted(
        {*session.scalars(select(Domain.name)), *session.scalars(select(Project.name))}
        - billed
        - plans.RESERVED
    )
    return {
        "tenants": tenants,
        "plans": plans.plan_names(session),
        "packages": sorted(set(session.scalars(select(Package.name)))),
    }


def account_rows(session: Session, access: Access) -> list[dict[str, Any]]:
    """The accounts the caller may see, with plan and package names."""
    names = dict(session.execute(select(PricePlan.id, PricePlan.name)).all())
    currencies = dict(session.execute(select(PricePlan.id, PricePlan.currency)).all())
    packages = dict(session.execute(select(Package.id, Package.name)).all())
    return [
        {
            "tenant": a.tenant,
            "plan": names.get(a.plan_id, ""),
            "currency": currencies.get(a.plan_id, "CNY"),
            "package": packages.get(a.package_id) if a.package_id else None,
            "balance": a.balance,
        }
        for a in billing.accounts(session, access)
    ]
