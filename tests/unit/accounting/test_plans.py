"""Price plan documents and billing accounts: validation by field path, apply/export round
trip, package replacement, accounts on plans and packages, and a bill at the applied rates."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from accounting.billing import post_bill
from accounting.billing_models import BillingAccount, Package, Price
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.plans import (
    KEEP,
    AccountExists,
    NotFoundError,
    PlanError,
    UnknownName,
    account_settings,
    apply_plan,
    change_account,
    normalise,
    open_account,
    parse_plan,
    plan_document,
)
from tests.unit.accounting.builders import acct

DOC: dict[str, Any] = {
    "name": "standard",
    "currency": "CNY",
    "storage_price": "0.10",
    "prices": [
        {"resource": "gpu", "model": "a100", "rate": "12.00"},
        {"resource": "gpu", "rate": "8.00"},
        {"resource": "npu", "model": "910b", "rate": "9.00"},
        {"resource": "cpu", "rate": "0.05"},
        {"resource": "mem", "rate": "0.01"},
    ],
    "packages": [{"name": "lab-100", "monthly_fee": "900", "included_card_hours": "100"}],
}


def doc(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(DOC)
    out.update(changes)
    return out


#: the tenants the tests' check knows: the portal passes a check against its domains and
#: projects, the command line one against Slurm's accounts
TENANTS = frozenset({"research", "nlp", "teaching"})


def open_(session: Session, tenant: str, plan: str, package: str | None = None) -> object:
    return open_account(session, tenant, plan, package, tenant_exists=TENANTS.__contains__)


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    with Session(engine) as s:
        yield s


PRICE = {"resource": "gpu", "rate": "1"}


@pytest.mark.parametrize(
    ("document", "path", "fragment"),
    [
        (doc(colour="red"), "colour", "Unknown field"),
        (doc(name=""), "name", "Length must be between 1 and 64"),
        (doc(name="a b"), "name", "letters, digits"),
        (doc(name="x\n"), "name", "letters, digits"),
        (doc(currency="cny"), "currency", "3 upper-case letters"),
        (doc(currency="CNY\n"), "currency", "3 upper-case letters"),
        (doc(storage_price=0.1), "storage_price", "not a float"),
        (doc(storage_price="-1"), "storage_price", "at least 0"),
        (doc(storage_price="abc"), "storage_price", "decimal string"),
        (doc(storage_price="NaN"), "storage_price", "decimal string"),
        (doc(storage_price=True), "storage_price", "decimal string"),
        (doc(storage_price="0.0000001"), "storage_price", "6 decimal places"),
        (doc(storage_price="1000000001"), "storage_price", "at most 1,000,000,000"),
        (doc(prices=[]), "prices", "Shorter than minimum"),
        (doc(prices=None), "prices", "may not be null"),
        (doc(prices=[{"resource": "tpu", "rate": "1"}]), "prices[0].resource", "Must be one of"),
        (doc(prices=[PRICE, {"resource": "gpu", "rate": 12.5}]), "prices[1].rate", "not a float"),
        (doc(prices=[{"resource": "gpu"}]), "prices[0].rate", "Missing data"),
        (doc(prices=[{**PRICE, "unit": "h"}]), "prices[0].unit", "Unknown field"),
        (doc(prices=[{**PRICE, "model": "a 100"}]), "prices[0].model", "letters, digits"),
        (
            doc(prices=[{"resource": "cpu", "model": "x86", "rate": "1"}]),
            "prices[0].model",
            "leave the model out",
        ),
        (doc(prices=[PRICE, {**PRICE, "rate": "2"}]), "prices[1]", "second rate for gpu"),
        (
            doc(packages=[{"name": "a", "monthly_fee": "1"}, {"name": "a", "monthly_fee": "2"}]),
            "packages[1].name",
            "second package named a",
        ),
        (doc(packages=[{"name": "a"}]), "packages[0].monthly_fee", "Missing data"),
        (
            doc(packages=[{"name": "a", "monthly_fee": 9.5}]),
            "packages[0].monthly_fee",
            "not a float",
        ),
        (["name", "x"], "document", "must be a mapping"),
    ],
)
def test_bad_documents_name_the_field(document: Any, path: str, fragment: str) -> None:
    with pytest.raises(PlanError) as err:
        normalise(document)
    assert path in err.value.errors, err.value.errors
    assert any(fragment in str(m) for m in err.value.errors[path]), err.value.errors
    assert path in str(err.value)


def test_yaml_floats_and_bad_yaml_are_refused() -> None:
    with pytest.raises(PlanError, match=r"prices\[0\]\.rate: .*not a float"):
        parse_plan("name: x\nprices:\n  - {resource: gpu, rate: 8.00}\n")
    with pytest.raises(PlanError, match="not valid YAML"):
        parse_plan("name: [x\n")
    ok = parse_plan('{"name": "x", "prices": [{"resource": "gpu", "rate": 8}]}')  # JSON
    assert ok.prices[0].rate == Decimal(8)


def test_the_document_is_normalised() -> None:
    shuffled = doc(
        prices=[*reversed(DOC["prices"])],
        packages=[{"name": "b", "monthly_fee": 5}, {"name": "a", "monthly_fee": "1.5000"}],
    )
    del shuffled["currency"]
    assert normalise(shuffled) == {
        "name": "standard",
        "currency": "CNY",
        "storage_price": "0.10",
        "prices": normalise(DOC)["prices"],
        "packages": [
            {"name": "a", "monthly_fee": "1.50", "included_card_hours": "0.00"},
            {"name": "b", "monthly_fee": "5.00", "included_card_hours": "0.00"},
        ],
    }
    assert [p.get("model", "") for p in normalise(DOC)["prices"]] == ["a100", "", "910b", "", ""]
    assert normalise(doc(storage_price="0.000123"))["storage_price"] == "0.000123"


def test_apply_and_export_round_trip(session: Session) -> None:
    plan = apply_plan(session, DOC)
    assert plan_document(session, plan.name) == normalise(DOC)
    assert apply_plan(session, plan_document(session, "standard")).id == plan.id  # no-op edit
    assert plan_document(session, "standard") == normalise(DOC)
    with pytest.raises(NotFoundError):
        plan_document(session, "nope")


def test_replacing_a_plan_keeps_used_packages(session: Session) -> None:
    apply_plan(session, DOC)
    open_(session, "research", "standard", "lab-100")
    kept = session.scalar(select(Package.id).where(Package.name == "lab-100"))
    new = doc(
        prices=[{"resource": "gpu", "rate": "7.00"}],
        packages=[
            {"name": "lab-100", "monthly_fee": "800", "included_card_hours": "120"},
            {"name": "lab-200", "monthly_fee": "1500", "included_card_hours": "200"},
        ],
    )
    apply_plan(session, new)
    assert plan_document(session, "standard") == normalise(new)
    assert session.scalar(select(Package.id).where(Package.name == "lab-100")) == kept
    assert account_settings(session, "research")["package"] == "lab-100"
    assert session.scalar(select(func.count()).select_from(Price)) == 1


def test_a_package_in_use_is_not_removed(session: Session) -> None:
    apply_plan(session, DOC)
    open_(session, "research", "standard", "lab-100")
    with pytest.raises(PlanError, match="package lab-100 is still used by research") as err:
        apply_plan(session, doc(packages=[], prices=[PRICE], storage_price="9"))
    assert "packages" in err.value.errors
    assert plan_document(session, "standard") == normalise(DOC)  # nothing half-written
    change_account(session, "research", package=None)
    apply_plan(session, doc(packages=[]))
    assert plan_document(session, "standard")["packages"] == []


def test_accounts_on_plans_and_packages(session: Session) -> None:
    apply_plan(session, DOC)
    apply_plan(session, doc(name="economy", packages=[{"name": "mini", "monthly_fee": "10"}]))
    with pytest.raises(PlanError) as err:
        open_(session, "nobody", "standard")
    assert list(err.value.errors) == ["tenant"]
    with pytest.raises(PlanError) as err:
        open_(session, "nlp", "gold")
    assert list(err.value.errors) == ["plan"]
    with pytest.raises(PlanError, match="has no package mini") as err:
        open_(session, "nlp", "standard", "mini")  # economy's package
    assert list(err.value.errors) == ["package"]
    open_(session, "nlp", "standard", "lab-100")
    with pytest.raises(AccountExists):
        open_(session, "nlp", "economy")
    # another plan while the package is the old plan's: refused, unchanged
    with pytest.raises(PlanError, match="belongs to the plan standard"):
        change_account(session, "nlp", plan="economy")
    assert account_settings(session, "nlp")["plan"] == "standard"
    change_account(session, "nlp", plan="economy", package="mini")
    assert account_settings(session, "nlp") == {
        "tenant": "nlp",
        "plan": "economy",
        "package": "mini",
        "balance": "0.00",
    }
    change_account(session, "nlp", package=KEEP)
    change_account(session, "nlp", package=None)
    assert account_settings(session, "nlp")["package"] is None
    with pytest.raises(NotFoundError):
        change_account(session, "teaching", plan="economy")


def test_the_caller_says_which_tenants_exist(session: Session) -> None:
    apply_plan(session, DOC)
    asked: list[str] = []

    def physics_only(tenant: str) -> bool:
        asked.append(tenant)
        return tenant == "physics"

    with pytest.raises(UnknownName, match="no domain or project named nlp"):
        open_account(session, "nlp", "standard", tenant_exists=physics_only)
    with pytest.raises(PlanError, match="plans is reserved"):
        open_account(session, "plans", "standard", tenant_exists=physics_only)
    open_account(session, "physics", "standard", tenant_exists=physics_only)
    assert asked == ["nlp", "physics"]  # a reserved name is refused before asking
    assert account_settings(session, "physics")["plan"] == "standard"


def test_a_bill_after_applying_a_plan_uses_its_rates(session: Session) -> None:
    day = datetime(2026, 10, 5, 9, tzinfo=UTC)
    topo = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
    jobs = [
        acct(1, "cpu=2,gres/gpu=1,gres/gpu:a100=1", hours=10, start=day, account="nlp"),
        acct(2, "cpu=1,gres/npu=1,gres/npu:910b=1", hours=4, start=day, account="nlp"),
    ]
    bind = session.get_bind()
    assert isinstance(bind, Engine)
    ingest(bind, [u for j in jobs if (u := meter(j, topo)) is not None])
    apply_plan(session, doc(prices=[{"resource": "gpu", "rate": "1"}], packages=[]))
    open_(session, "nlp", "standard")
    apply_plan(session, DOC)  # the operator's edit: these rates price the month
    bill = post_bill(session, "nlp", day, now=datetime(2026, 11, 2, tzinfo=UTC))
    # 10 a100 card-hours at 12.00, 4 910b card-hours at 9.00, 24 CPU-hours at 0.05
    assert bill.total == Decimal("120.00") + Decimal("36.00") + Decimal("1.20")
    acct_row = session.scalar(select(BillingAccount).where(BillingAccount.tenant == "nlp"))
    assert acct_row is not None
    assert acct_row.balance == -bill.total


def test_effective_dates_round_trip_and_are_checked(session: Session) -> None:
    dated = doc(effective_from="2026-01-01", effective_until="2026-12-31")
    apply_plan(session, dated)
    assert plan_document(session, "standard") == normalise(dated)
    assert plan_document(session, "standard")["effective_until"] == "2026-12-31"
    undated = plan_document(session, "standard")
    undated.pop("effective_from")
    undated.pop("effective_until")
    apply_plan(session, undated)
    assert "effective_from" not in plan_document(session, "standard")
    with pytest.raises(PlanError) as err:
        normalise(doc(effective_from="2026-02-01", effective_until="2026-01-31"))
    assert list(err.value.errors) == ["effective_until"]
    with pytest.raises(PlanError) as err:
        parse_plan("name: x\nprices: [{resource: gpu, rate: '1'}]\neffective_from: someday\n")
    assert list(err.value.errors) == ["effective_from"]
