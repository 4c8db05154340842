"""The portal's billing API and page: who sees which balance, operator top-ups and bills
(audited), validation."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import select

from accounting.billing_models import BillingAccount, Price, PricePlan
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal.audit.models import AuditEvent
from portal.extensions import db
from tests.unit.accounting.builders import acct
from tests.unit.portal.conftest import Env

TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)


DAY = datetime(2026, 10, 5, 9, tzinfo=UTC)


@pytest.fixture
def billed(env: Env) -> Env:
    day = DAY
    jobs = [
        acct(1, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=10, start=day, account="nlp"),
        acct(2, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=3, start=day, account="cs101"),
    ]
    with env.app.app_context():
        ingest(db.engine, [u for j in jobs if (u := meter(j, TOPO)) is not None])
        s = db.session
        plan = PricePlan(name="std", currency="CNY", storage_price=Decimal(0))
        s.add(plan)
        s.flush()
        s.add(Price(plan_id=plan.id, resource="gpu", model="", rate=Decimal("2.50")))
        for tenant in ("research", "nlp", "cs101"):
            s.add(BillingAccount(tenant=tenant, plan_id=plan.id))
        s.commit()
    return env


def tenants(env: Env, who: str) -> list[str]:
    res = env.api(who).get("/api/v1/usage/billing")
    assert res.status_code == 200
    return [a["tenant"] for a in res.json]


def test_who_sees_which_account(billed: Env) -> None:
    assert tenants(billed, "admin") == ["cs101", "nlp", "research"]
    assert tenants(billed, "erin") == ["nlp", "research"]  # research's domain admin
    assert tenants(billed, "carol") == ["cs101"]  # cs101's manager
    assert tenants(billed, "alice") == ["nlp"]  # a member: the balance and this month
    member = billed.api("alice").get("/api/v1/usage/billing/nlp")
    assert member.status_code == 200
    assert (member.json["full"], member.json["bills"], member.json["ledger"]) == (False, [], [])
    assert billed.api("alice").get("/api/v1/usage/billing/research").status_code == 404
    assert billed.api("alice").get("/api/v1/usage/billing/cs101").status_code == 404
    assert billed.api("tina").get("/api/v1/usage/billing/research").status_code == 404


def test_members_see_the_month_so_far_and_their_share(billed: Env, monkeypatch) -> None:
    """What a member was told was no billing account at all: the project's balance, this
    month's charges so far and their own jobs' share, in both languages."""
    monkeypatch.setitem(billed.app.config, "CLOCK", lambda: datetime(2026, 10, 20, tzinfo=UTC))
    with billed.app.app_context():
        ingest(
            db.engine,
            [
                u
                for j in [
                    acct(3, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=4, user="bob", start=DAY)
                ]
                if (u := meter(j, TOPO)) is not None
            ],
        )
    me = billed.api("alice").get("/api/v1/usage/billing/nlp").json["this_month"]
    assert me["month"] == "2026-10"
    assert Decimal(me["total"]) == Decimal("35.00")  # 10 + 4 card-hours of nlp at 2.50
    assert Decimal(me["mine"]) == Decimal("25.00")  # alice's 10
    manager = billed.api("erin").get("/api/v1/usage/billing/nlp").json
    assert manager["full"] is True
    assert Decimal(manager["this_month"]["mine"]) == 0  # erin ran nothing
    page = billed.api("alice").get("/usage/billing/nlp", headers={"Accept-Language": "zh-CN"})
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "本月至今（2026-10）" in text
    assert "¥35.00" in text
    assert "¥25.00" in text
    assert "账单和账户收支明细仅向项目管理员显示" in text
    assert "充值" not in text


def test_operator_tops_up_and_bills_a_month(billed: Env) -> None:
    admin = billed.api("admin")
    res = admin.post("/api/v1/usage/billing/research/topups", json={"amount": "100.00"})
    assert res.status_code == 200, res.json
    assert Decimal(res.json["balance"]) == 100
    res = admin.post("/api/v1/usage/billing/research/bills", json={"month": "2026-10"})
    assert res.status_code == 200, res.json
    (bill,) = res.json["bills"]
    assert Decimal(bill["total"]) == Decimal("25.00")  # 10 card-hours at 2.50
    assert Decimal(res.json["balance"]) == Decimal("75.00")
    assert [e["kind"] for e in res.json["ledger"]] == ["bill", "topup"]
    again = admin.post("/api/v1/usage/billing/research/bills", json={"month": "2026-10"})
    assert again.status_code == 409
    with billed.app.app_context():
        actions = db.session.scalars(
            select(AuditEvent.action).where(AuditEvent.action.like("billing.%"))
        ).all()
    assert sorted(actions) == ["billing.bill", "billing.topup"]
    page = billed.api("erin").get("/usage/billing/research")
    assert page.status_code == 200
    assert "GPU card-hours" in page.get_data(as_text=True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"amount": "-5"}, "amount"),
        ({"amount": "1.001"}, "amount"),
        ({"amount": "10", "colour": "red"}, "colour"),
        ({}, "amount"),
    ],
)
def test_bad_top_ups_are_refused(billed: Env, body: dict[str, str], field: str) -> None:
    res = billed.api("admin").post("/api/v1/usage/billing/research/topups", json=body)
    assert res.status_code == 422
    assert field in res.json["errors"]["json"]


def test_only_operators_change_balances(billed: Env) -> None:
    res = billed.api("erin").post("/api/v1/usage/billing/research/topups", json={"amount": "5"})
    assert res.status_code == 403
    res = billed.api("erin").post("/api/v1/usage/billing/research/bills", json={"month": "2026-10"})
    assert res.status_code == 403
    with billed.app.app_context():
        acct_row = db.session.scalar(
            select(BillingAccount).where(BillingAccount.tenant == "research")
        )
        assert acct_row is not None
        assert acct_row.balance == 0
        assert db.session.scalars(select(AuditEvent.action)).all().count("billing.topup") == 0


def test_a_bad_month_is_refused(billed: Env) -> None:
    res = billed.api("admin").post("/api/v1/usage/billing/nlp/bills", json={"month": "0000-01"})
    assert res.status_code == 422
    assert "month" in res.json["errors"]["json"]


def test_an_open_month_is_not_billed(billed: Env) -> None:
    month = datetime.now(UTC).strftime("%Y-%m")
    res = billed.api("admin").post("/api/v1/usage/billing/nlp/bills", json={"month": month})
    assert res.status_code == 409  # the month's state, not the request, is in the way
    assert "not over yet" in res.json["message"]
