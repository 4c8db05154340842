"""Price plans and billing accounts as operators edit them: a plan *document* (YAML or JSON),
validated, applied in one transaction, and exported again for the next edit.

```yaml
name: standard
currency: CNY
storage_price: "0.10"            # per GiB-month
prices:                          # per card-hour (gpu, npu), CPU-hour, GiB-hour (mem)
  - {resource: gpu, model: a100, rate: "12.00"}
  - {resource: gpu, rate: "8.00"}  # any other GPU model
packages:
  - {name: lab-100, monthly_fee: "900", included_card_hours: "100"}
```

Money is Decimal strings or integers, never floats (``12.1`` is not exact in binary). A plan
is applied whole: its prices are replaced, its packages are matched by name (a kept package
keeps its id, so the accounts on it stay on it), and a package that an account still uses
cannot be removed. No Flask here: the CLI and the portal's service both call these.

Billing accounts are opened for tenants, and who the tenants are is the caller's to say: the
portal passes a check against its domains and projects, the command line one against Slurm's
accounts (``tenant_exists``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from accounting.billing_models import BillingAccount, Package, Price, PricePlan
from accounting.plan_schema import (
    PackageSpec,
    PlanError,
    PlanSchema,
    PlanSpec,
    RateSpec,
    load_plan,
    money_text,
    normalise,
    parse_plan,
)
from translations import N_, Message

__all__ = [
    "KEEP",
    "RESERVED",
    "AccountExists",
    "NotFoundError",
    "PlanError",
    "PlanSchema",
    "PlanSpec",
    "TenantCheck",
    "UnknownName",
    "account_settings",
    "accounts_by_plan",
    "apply_plan",
    "change_account",
    "load_plan",
    "normalise",
    "open_account",
    "parse_plan",
    "plan_document",
    "plan_names",
    "plan_spec",
]


class UnknownName(PlanError):
    """A change names a plan or a tenant that does not exist (an API answers 404)."""


class NotFoundError(LookupError):
    """No plan, or no billing account, of that name."""


class AccountExists(ValueError):
    """The tenant already has a billing account; ``message`` says so in any language."""

    def __init__(self, tenant: str) -> None:
        self.message = Message.of(N_("%(tenant)s already has a billing account."), tenant=tenant)
        super().__init__(str(self.message))


# ---------------------------------------------------------------------- plans in the database
def _plan(session: Session, name: str) -> PricePlan | None:
    return session.scalar(select(PricePlan).where(PricePlan.name == name))


def plan_spec(session: Session, name: str) -> PlanSpec:
    plan = _plan(session, name)
    if plan is None:
        raise NotFoundError(f"no price plan named {name!r}")
    prices = session.scalars(select(Price).where(Price.plan_id == plan.id))
    packages = session.scalars(select(Package).where(Package.plan_id == plan.id))
    return PlanSpec(
        name=plan.name,
        currency=plan.currency,
        storage_price=plan.storage_price,
        effective_from=plan.effective_from,
        effective_until=plan.effective_until,
        prices=tuple(
            sorted((RateSpec(p.resource, p.model, p.rate) for p in prices), key=RateSpec.order)
        ),
        packages=tuple(
            sorted(
                (PackageSpec(k.name, k.monthly_fee, k.included_card_hours) for k in packages),
                key=lambda k: k.name,
            )
        ),
    )


def plan_document(session: Session, name: str) -> dict[str, Any]:
    """The stored plan as a document: what :func:`apply_plan` takes back."""
    return plan_spec(session, name).document()


def plan_names(session: Session) -> list[str]:
    return list(session.scalars(select(PricePlan.name).order_by(PricePlan.name)))


def accounts_by_plan(session: Session) -> dict[str, list[str]]:
    """Plan name -> the tenants billed on it, sorted."""
    rows = session.execute(
        select(PricePlan.name, BillingAccount.tenant)
        .join(BillingAccount, BillingAccount.plan_id == PricePlan.id)
        .order_by(BillingAccount.tenant)
    )
    out: dict[str, list[str]] = {}
    for plan, tenant in rows:
        out.setdefault(plan, []).append(tenant)
    return out


def apply_plan(session: Session, doc: Any, *, commit: bool = True) -> PricePlan:
    """Create or replace the plan ``doc`` names, in one transaction (committed here, or left
    to the caller with ``commit=False``, e.g. to add its audit record to it).

    Prices are replaced; packages are matched by name: kept ones are updated in place (the
    accounts on them stay), new ones added, and missing ones removed unless an account uses
    them (then nothing is written and the error names the accounts).
    """
    spec = load_plan(doc)
    try:
        plan = _plan(session, spec.name)
        if plan is None:
            plan = PricePlan(name=spec.name)
            session.add(plan)
        plan.currency = spec.currency
        plan.storage_price = spec.storage_price
        plan.effective_from = spec.effective_from
        plan.effective_until = spec.effective_until
        session.flush()
        _replace_packages(session, plan, spec.packages)
        session.execute(delete(Price).where(Price.plan_id == plan.id))
        session.add_all(
            Price(plan_id=plan.id, resource=p.resource, model=p.model, rate=p.rate)
            for p in spec.prices
        )
        session.flush()
        if commit:
            session.commit()
    except IntegrityError as exc:  # the same plan created at the same time
        session.rollback()
        again = Message.of(
            N_("The plan %(name)s changed meanwhile; apply it again."), name=spec.name
        )
        raise PlanError({"name": [again]}) from exc
    except Exception:
        session.rollback()
        raise
    return plan


def _replace_packages(session: Session, plan: PricePlan, wanted: Sequence[PackageSpec]) -> None:
    have = {k.name: k for k in session.scalars(select(Package).where(Package.plan_id == plan.id))}
    names = {k.name for k in wanted}
    gone = [row for name, row in have.items() if name not in names]
    in_use: dict[str, list[str]] = {}
    for old in gone:
        tenants = session.scalars(
            select(BillingAccount.tenant)
            .where(BillingAccount.package_id == old.id)
            .order_by(BillingAccount.tenant)
        ).all()
        if tenants:
            in_use[old.name] = list(tenants)
    if in_use:
        raise PlanError(
            {
                "packages": [
                    Message.of(
                        N_(
                            "The package %(name)s is still used by %(tenants)s: move those "
                            "accounts to another package first."
                        ),
                        name=name,
                        tenants=", ".join(tenants),
                    )
                    for name, tenants in sorted(in_use.items())
                ]
            }
        )
    for old in gone:
        session.delete(old)
    for k in wanted:
        row = have.get(k.name) or Package(plan_id=plan.id, name=k.name)
        row.monthly_fee = k.monthly_fee
        row.included_card_hours = k.included_card_hours
        session.add(row)
    session.flush()


# ---------------------------------------------------------------------- billing accounts
#: names the billing routes of the portal's API take below /billing/: a tenant so named would
#: be unreachable there
RESERVED: Final = frozenset({"plans", "accounts"})

#: whether a tenant (a domain or a project) of that name exists; the caller knows its tenants
TenantCheck = Callable[[str], bool]


class _Keep:
    """The package argument left out: keep the account's package."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = _Keep()


def _package_of(session: Session, plan: PricePlan, name: str | None) -> Package | None:
    if name is None:
        return None
    package = session.scalar(
        select(Package).where(Package.plan_id == plan.id, Package.name == name)
    )
    if package is None:
        offered = session.scalars(
            select(Package.name).where(Package.plan_id == plan.id).order_by(Package.name)
        ).all()
        missing = (
            Message.of(
                N_("The plan %(plan)s has no package %(name)s (it has %(offered)s)."),
                plan=plan.name,
                name=name,
                offered=", ".join(offered),
            )
            if offered
            else Message.of(
                N_("The plan %(plan)s has no package %(name)s (it has no packages)."),
                plan=plan.name,
                name=name,
            )
        )
        raise PlanError({"package": [missing]})
    return package


def _plan_named(session: Session, name: str) -> PricePlan:
    plan = _plan(session, name)
    if plan is None:
        raise UnknownName(
            {"plan": [Message.of(N_("There is no price plan named %(name)s."), name=name)]}
        )
    return plan


def account_settings(session: Session, tenant: str) -> dict[str, Any]:
    """A billing account's plan and package by name (what the audit log and CLI show)."""
    acct = session.scalar(select(BillingAccount).where(BillingAccount.tenant == tenant))
    if acct is None:
        raise NotFoundError(f"{tenant!r} has no billing account")
    plan = session.get(PricePlan, acct.plan_id)
    package = session.get(Package, acct.package_id) if acct.package_id else None
    return {
        "tenant": acct.tenant,
        "plan": plan.name if plan else None,
        "package": package.name if package else None,
        "balance": money_text(acct.balance),
    }


def open_account(
    session: Session,
    tenant: str,
    plan: str,
    package: str | None = None,
    *,
    tenant_exists: TenantCheck,
    commit: bool = True,
) -> BillingAccount:
    """A billing account for ``tenant``, which ``tenant_exists`` must know, on ``plan``
    (committed unless ``commit=False``)."""
    if tenant in RESERVED:
        reserved = N_("The name %(name)s is reserved by the billing API.")
        raise PlanError({"tenant": [Message.of(reserved, name=tenant)]})
    if not tenant_exists(tenant):
        unknown = N_("There is no domain or project named %(name)s.")
        raise UnknownName({"tenant": [Message.of(unknown, name=tenant)]})
    if session.scalar(select(BillingAccount.id).where(BillingAccount.tenant == tenant)):
        raise AccountExists(tenant)
    price_plan = _plan_named(session, plan)
    pkg = _package_of(session, price_plan, package)
    acct = BillingAccount(tenant=tenant, plan_id=price_plan.id, package_id=pkg.id if pkg else None)
    session.add(acct)
    try:
        session.flush()
        if commit:
            session.commit()
    except IntegrityError as exc:  # opened at the same time
        session.rollback()
        raise AccountExists(tenant) from exc
    return acct


def change_account(
    session: Session,
    tenant: str,
    plan: str | None = None,
    package: str | _Keep | None = KEEP,
    *,
    commit: bool = True,
) -> BillingAccount:
    """Move an account to another plan and/or package (``None``: no package); committed unless
    ``commit=False``.

    The package must belong to the account's (new) plan: moving an account with a package to
    another plan needs the new plan's package, or ``None``.
    """
    acct = session.scalar(select(BillingAccount).where(BillingAccount.tenant == tenant))
    if acct is None:
        raise NotFoundError(f"{tenant!r} has no billing account")
    price_plan = _plan_named(session, plan) if plan is not None else _plan_of(session, acct)
    if isinstance(package, _Keep):
        current = session.get(Package, acct.package_id) if acct.package_id else None
        if current is not None and current.plan_id != price_plan.id:
            raise PlanError(
                {
                    "package": [
                        Message.of(
                            N_(
                                "The package %(package)s of %(tenant)s belongs to the plan "
                                "%(old)s: give a package of %(plan)s, or none."
                            ),
                            package=current.name,
                            tenant=tenant,
                            old=_plan_name(session, current.plan_id),
                            plan=price_plan.name,
                        )
                    ]
                }
            )
        pkg = current
    else:
        pkg = _package_of(session, price_plan, package)
    acct.plan_id = price_plan.id
    acct.package_id = pkg.id if pkg else None
    session.flush()
    if commit:
        session.commit()
    return acct


def _plan_of(session: Session, acct: BillingAccount) -> PricePlan:
    # the foreign key keeps an account's plan; a row gone meanwhile is a lookup failure
    plan = session.get(PricePlan, acct.plan_id)
    if plan is None:
        raise NotFoundError(f"{acct.tenant!r} is on a price plan that no longer exists")
    return plan


def _plan_name(session: Session, plan_id: int) -> str:
    return session.scalar(select(PricePlan.name).where(PricePlan.id == plan_id)) or "?"
