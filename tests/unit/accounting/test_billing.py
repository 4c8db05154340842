"""Billing: Decimal money, rates per model, packages, storage, balances, top-ups, one bill
per month."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from accounting.billing import BillingError, history, post_bill, price_month, top_up
from accounting.billing_models import BillingAccount, BillLine, Package, Price, PricePlan
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from tests.unit.accounting.builders import acct

OCT = datetime(2026, 10, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 5, tzinfo=UTC)
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research", "vision": "research"}
)
D = Decimal


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    day = datetime(2026, 10, 10, 8, tzinfo=UTC)
    jobs = [
        acct(1, "cpu=4,mem=8G,gres/gpu=2,gres/gpu:a100=2", hours=10, start=day, account="nlp"),
        acct(2, "cpu=2,gres/shard=8", hours=4, start=day, account="nlp", user="sam"),
        acct(
            3,
            "cpu=1,gres/npu=1,gres/npu:910b=1",
            hours=6,
            start=day,
            account="vision",
            partition="npu",
            nodes="npu1",
            user="bob",
        ),
    ]
    ingest(engine, [u for j in jobs if (u := meter(j, TOPO)) is not None])
    with Session(engine) as s:
        plan = PricePlan(name="standard", currency="CNY", storage_price=D("0.50"))
        s.add(plan)
        s.flush()
        s.add_all(
            [
                Price(plan_id=plan.id, resource="gpu", model="a100", rate=D("12.50")),
                Price(plan_id=plan.id, resource="gpu", model="", rate=D("8.00")),
                Price(plan_id=plan.id, resource="npu", model="910b", rate=D("6.00")),
                Price(plan_id=plan.id, resource="cpu", model="", rate=D("0.10")),
                Price(plan_id=plan.id, resource="mem", model="", rate=D("0.01")),
            ]
        )
        pkg = Package(
            plan_id=plan.id, name="starter", monthly_fee=D("100"), included_card_hours=D("5")
        )
        s.add(pkg)
        s.flush()
        s.add(
            BillingAccount(
                tenant="research", plan_id=plan.id, package_id=pkg.id, storage_gib=D("200")
            )
        )
        s.add(BillingAccount(tenant="vision", plan_id=plan.id))
        s.commit()
        yield s


def test_a_month_is_priced_line_by_line(session: Session) -> None:
    research = session.scalar(select(BillingAccount).where(BillingAccount.tenant == "research"))
    assert research is not None
    lines = {
        ln.description: (ln.quantity, ln.unit_price, ln.amount)
        for ln in price_month(session, research, OCT)
    }
    # 2 GPUs x 10 h + 8/32 card x 4 h = 21 a100 card-hours; NPU 6 card-hours (vision)
    # the package's 5 card-hours cover the dearest first (a100 at 12.50)
    assert lines == {
        "package starter": (D(1), D(100), D(100)),
        "GPU card-hours (a100), in package": (D(5), D(0), D(0)),
        "GPU card-hours (a100)": (D(16), D("12.50"), D("200.00")),
        "NPU card-hours (910b)": (D(6), D(6), D("36.00")),
        "CPU-hours": (D(4 * 10 + 2 * 4 + 6), D("0.10"), D("5.40")),
        "memory GiB-hours": (D(8 * 10), D("0.01"), D("0.80")),
        "storage GiB-months": (D(200), D("0.50"), D("100.00")),
    }


def test_posting_debits_the_balance_once(session: Session) -> None:
    assert top_up(session, "research", D("500.00"), actor="admin", note="grant") == D("500.00")
    bill = post_bill(session, "research", OCT, actor="admin", now=NOW)
    assert bill.total == D("442.20")
    assert isinstance(bill.total, Decimal)
    lines = session.scalars(select(BillLine).where(BillLine.bill_id == bill.id)).all()
    assert sum(ln.amount for ln in lines) == bill.total
    with pytest.raises(BillingError, match="already billed for 2026-10"):
        post_bill(session, "research", OCT, now=NOW)
    entries = [(e.kind, e.amount, e.balance_after) for e in history(session, "research")]
    assert entries == [("bill", D("-442.20"), D("57.80")), ("topup", D("500.00"), D("500.00"))]


def test_a_missing_rate_is_an_error_and_writes_nothing(session: Session) -> None:
    session.execute(Price.__table__.delete().where(Price.resource == "npu"))  # type: ignore[attr-defined]
    session.commit()
    with pytest.raises(BillingError, match="no rate for npu:910b"):
        post_bill(session, "vision", OCT, now=NOW)
    session.rollback()
    assert history(session, "vision") == []


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        (D("-5"), "positive"),
        (D("0"), "positive"),
        (D("1.001"), "2 decimal"),
        (D("NaN"), "positive"),
    ],
)
def test_bad_top_ups(session: Session, amount: Decimal, message: str) -> None:
    with pytest.raises(BillingError, match=message):
        top_up(session, "research", amount, actor="admin")


def test_unknown_tenant_and_open_month(session: Session) -> None:
    with pytest.raises(BillingError, match="no billing account"):
        top_up(session, "nobody", D(1), actor="admin")
    with pytest.raises(BillingError, match="not over yet"):
        post_bill(session, "research", datetime(2026, 11, 3, tzinfo=UTC), now=NOW)


def test_bill_lines_are_named_in_each_language(session: Session) -> None:
    from accounting.labels import item

    research = session.scalar(select(BillingAccount).where(BillingAccount.tenant == "research"))
    assert research is not None
    lines = price_month(session, research, OCT)
    assert [item("zh_CN", ln) for ln in lines] == [
        "套餐 starter（月费）",
        "GPU 卡时（a100），套餐内",
        "GPU 卡时（a100）",
        "NPU 卡时（910b）",
        "CPU 核时",
        "内存 GiB·时",
        "存储 GiB·月",
    ]
    assert [item("en", ln) for ln in lines][:2] == [
        "Package starter (monthly fee)",
        "GPU card-hours (a100), in the package",
    ]
    post_bill(session, "research", OCT, now=NOW)
    stored = session.scalars(select(BillLine).order_by(BillLine.id)).all()
    assert [item("zh_CN", ln) for ln in stored] == [item("zh_CN", ln) for ln in lines]
    old = BillLine(description="GPU card-hours (a100)", item="")  # a bill from before
    assert item("zh_CN", old) == "GPU card-hours (a100)"


def test_a_month_outside_the_plans_days_is_not_billed(session: Session) -> None:
    from datetime import date

    plan = session.scalar(select(PricePlan).where(PricePlan.name == "standard"))
    assert plan is not None
    plan.effective_from = date(2026, 11, 1)
    session.commit()
    with pytest.raises(BillingError, match="outside the days the price plan standard") as err:
        post_bill(session, "research", OCT, now=NOW)
    assert "2026-11-01" in str(err.value)
    assert "价格方案 standard" in err.value.message.render("zh_CN")
    plan.effective_from, plan.effective_until = date(2026, 10, 31), date(2027, 1, 1)
    session.commit()
    assert post_bill(session, "research", OCT, now=NOW).total > 0  # the month overlaps
