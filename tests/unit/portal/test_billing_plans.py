"""The portal's price plan and billing account API and pages: platform admins only (checked
on the server), every change audited with before/after, validation by field, and a bill at the
rates of the plan the API applied."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from accounting.plans import normalise
from portal.audit.models import AuditEvent
from portal.extensions import db
from tests.unit.accounting.builders import acct
from tests.unit.accounting.test_plans import DOC
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

API = "/api/v1/usage/billing"


def put(client: FlaskClient, doc: dict[str, Any], name: str | None = None) -> Any:
    return client.put(f"{API}/plans/{name or doc['name']}", json=doc)


@pytest.fixture
def planned(env: Env) -> Env:
    """The standard plan, and research on it with the lab-100 package."""
    admin = env.api("admin")
    assert put(admin, DOC).status_code == 200
    res = admin.post(
        f"{API}/accounts", json={"tenant": "research", "plan": "standard", "package": "lab-100"}
    )
    assert res.status_code == 201, res.json
    return env


def audit(env: Env, action: str) -> list[AuditEvent]:
    with env.app.app_context():
        rows = db.session.scalars(
            select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        ).all()
        db.session.expunge_all()
        return list(rows)


def test_admin_manages_plans_and_accounts_audited(planned: Env) -> None:
    admin = planned.api("admin")
    res = admin.get(f"{API}/plans")
    assert res.status_code == 200
    assert res.json == [{**normalise(DOC), "accounts": ["research"]}]
    assert admin.get(f"{API}/plans/standard").json == res.json[0]
    assert admin.get(f"{API}/plans/gold").status_code == 404
    cheaper = copy.deepcopy(DOC)
    cheaper["prices"][0]["rate"] = "11.00"
    res = put(admin, cheaper)
    assert res.status_code == 200, res.json
    assert res.json["prices"][0] == {"resource": "gpu", "model": "a100", "rate": "11.00"}
    first, second = audit(planned, "billing.plan")
    assert first.before is None
    assert first.after == normalise(DOC)
    assert second.before == normalise(DOC)
    assert second.after == normalise(cheaper)
    assert second.actor == "admin"
    (opened,) = audit(planned, "billing.account_open")
    assert opened.after is not None
    assert opened.after["plan"] == "standard"
    assert opened.after["package"] == "lab-100"
    assert opened.domain_id == planned.world.domains["research"]
    res = admin.patch(f"{API}/research", json={"package": None})
    assert res.status_code == 200, res.json
    assert res.json["package"] is None
    (changed,) = audit(planned, "billing.account_change")
    assert changed.before is not None
    assert changed.after is not None
    assert (changed.before["package"], changed.after["package"]) == ("lab-100", None)


@pytest.mark.parametrize(
    ("who", "visible"),
    [("erin", True), ("tina", False), ("carol", False), ("alice", False)],
)
def test_other_roles_are_refused_and_nothing_changes(planned: Env, who: str, visible: bool) -> None:
    # erin: research's domain admin; tina: teaching's; carol: a project manager; alice: a member
    client = planned.api(who)
    assert client.get(f"{API}/plans").status_code == 403
    assert client.get(f"{API}/plans/standard").status_code == 403
    assert put(client, {**DOC, "storage_price": "0"}).status_code == 403
    res = client.post(f"{API}/accounts", json={"tenant": "cs101", "plan": "standard"})
    assert res.status_code == 403
    # research's account: its domain admin may read it but not change it; others do not see it
    res = client.patch(f"{API}/research", json={"package": None})
    assert res.status_code == (403 if visible else 404)
    admin = planned.api("admin")
    assert admin.get(f"{API}/plans/standard").json["storage_price"] == "0.10"
    assert admin.get(f"{API}/research").json["package"] == "lab-100"
    assert [a["tenant"] for a in admin.get(API).json] == ["research"]
    assert len(audit(planned, "billing.plan")) == 1
    assert audit(planned, "billing.account_change") == []


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("put", "/plans/other", DOC, 422, "name"),
        ("put", "/plans/standard", {**DOC, "storage_price": 0.1}, 422, "storage_price"),
        ("put", "/plans/standard", {**DOC, "colour": "red"}, 422, "colour"),
        ("put", "/plans/standard", {**DOC, "packages": []}, 422, "packages"),  # in use
        ("post", "/accounts", {"tenant": "ghost", "plan": "standard"}, 404, None),  # no such
        ("post", "/accounts", {"tenant": "plans", "plan": "standard"}, 422, "tenant"),
        ("post", "/accounts", {"tenant": "nlp", "plan": "gold"}, 404, None),
        (
            "post",
            "/accounts",
            {"tenant": "nlp", "plan": "standard", "package": "x"},
            422,
            "package",
        ),
        ("post", "/accounts", {"tenant": "research", "plan": "standard"}, 409, None),
        ("post", "/accounts", {"tenant": "nlp"}, 422, "plan"),
        ("patch", "/research", {}, 422, "_schema"),
        ("patch", "/research", {"plan": "gold"}, 404, None),
        ("patch", "/research", {"package": "x"}, 422, "package"),
        ("patch", "/nlp", {"package": None}, 404, None),  # no account
    ],
)
def test_bad_requests(  # noqa: PLR0917 (one parameter per column)
    planned: Env, method: str, path: str, body: Any, status: int, field: str | None
) -> None:
    res = getattr(planned.api("admin"), method)(f"{API}{path}", json=body)
    assert res.status_code == status, res.json
    if field:
        assert field in res.json["errors"]["json"], res.json
    assert planned.api("admin").get(f"{API}/plans/standard").json["packages"] != []


def test_float_rates_name_their_path(env: Env) -> None:
    bad = copy.deepcopy(DOC)
    bad["prices"][1]["rate"] = 8.0
    res = put(env.api("admin"), bad)
    assert res.status_code == 422
    assert "not a float" in res.json["errors"]["json"]["prices"]["1"]["rate"][0]
    assert env.api("admin").get(f"{API}/plans").json == []


def test_a_bill_uses_the_rates_the_api_applied(env: Env) -> None:
    day = datetime(2026, 10, 5, 9, tzinfo=UTC)
    topo = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
    job = acct(1, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=10, start=day, account="nlp")
    with env.app.app_context():
        ingest(db.engine, [u for u in [meter(job, topo)] if u is not None])
    admin = env.api("admin")
    assert put(admin, DOC).status_code == 200
    res = admin.post(f"{API}/accounts", json={"tenant": "nlp", "plan": "standard"})
    assert res.status_code == 201
    res = admin.post(f"{API}/nlp/bills", json={"month": "2026-10"})
    assert res.status_code == 200, res.json
    (bill,) = res.json["bills"]
    # 20 a100 card-hours at 12.00 and 10 CPU-hours at 0.05
    assert Decimal(bill["total"]) == Decimal("240.50")
    assert {ln["description"]: ln["unit_price"] for ln in bill["lines"]} == {
        "GPU card-hours (a100)": "12",
        "CPU-hours": "0.05",
    }


def test_the_page_edits_plans_and_opens_accounts_for_admins(env: Env) -> None:
    client = login(env, "admin")
    page = client.get("/usage/billing").get_data(as_text=True)
    assert "Price plans" in page
    assert "No price plan yet." in page
    advanced = "/usage/billing/plans/advanced"
    editor = client.get(advanced).get_data(as_text=True)
    assert "name: new-plan" in editor
    text = "name: lab\nprices:\n  - {resource: gpu, rate: 8.5}\n  - {resource: gpu, rate: '1'}\n"
    assert client.post(advanced, data={"document": text}).status_code == 400
    res = client.post(advanced, data={"document": text, "csrf_token": csrf_of(editor)})
    assert res.status_code == 422
    shown = res.get_data(as_text=True)
    assert "<code>prices[0].rate</code>: Must be a decimal string" in shown
    assert "8.5" in shown  # the operator's text is kept for the next try
    good = text.replace("8.5", "'8.50'").replace("rate: '1'}", "model: a100, rate: '1'}")
    res = client.post(advanced, data={"document": good, "csrf_token": csrf_of(editor)})
    assert res.status_code == 302, res.get_data(as_text=True)
    editor = client.get(f"{advanced}?name=lab").get_data(as_text=True)
    assert "rate: &#39;8.50&#39;" in editor  # pre-filled from the stored plan, as YAML
    page = client.get("/usage/billing").get_data(as_text=True)
    assert 'id="plan-lab"' in page
    form = {"tenant": "vision", "plan": "lab", "package": "", "csrf_token": csrf_of(page)}
    res = client.post("/usage/billing/accounts", data=form)
    assert res.status_code == 302
    assert res.headers["Location"].endswith("/usage/billing/vision")
    assert "Price plan lab." in client.get("/usage/billing/vision").get_data(as_text=True)
    res = client.post("/usage/billing/accounts", data=form)  # vision is no longer a choice
    assert res.status_code == 422
    assert len(audit(env, "billing.plan")) == 1
    assert len(audit(env, "billing.account_open")) == 1


def test_the_page_shows_users_no_plans(planned: Env) -> None:
    client = login(planned, "erin")
    page = client.get("/usage/billing").get_data(as_text=True)
    assert "research" in page
    assert "Price plans" not in page
    assert "Open a billing account" not in page
    assert "Billing accounts and price plans" not in client.get("/usage").get_data(as_text=True)
    assert client.get("/usage/billing/plans").status_code == 403
    token = csrf_of(page)
    res = client.post("/usage/billing/plans", data={"document": "x", "csrf_token": token})
    assert res.status_code == 403
    form = {"tenant": "nlp", "plan": "standard", "package": "", "csrf_token": token}
    assert client.post("/usage/billing/accounts", data=form).status_code == 403
    alice = login(planned, "alice").get("/usage/billing").get_data(as_text=True)
    assert "research" not in alice
    assert "No billing account you may see." in alice


def test_the_account_page_tops_up_bills_and_moves_plans_for_admins(planned: Env) -> None:
    client = login(planned, "admin")
    url = "/usage/billing/research"
    page = client.get(url).get_data(as_text=True)
    for title in ("Top up", "Post a month's bill", "Price plan and package"):
        assert title in page
    token = csrf_of(page)
    assert client.post(f"{url}/topup", data={"amount": "10"}).status_code == 400
    res = client.post(f"{url}/topup", data={"amount": "1e3", "csrf_token": token})
    assert res.status_code == 422
    assert "A positive amount, with at most 2 decimals." in res.get_data(as_text=True)
    res = client.post(
        f"{url}/topup", data={"amount": "250.50", "note": "grant", "csrf_token": token}
    )
    assert res.status_code == 302
    page = client.get(url).get_data(as_text=True)
    assert "Balance <strong>CN¥250.50</strong>" in page
    assert "grant" in page
    res = client.post(f"{url}/bill", data={"month": "2026-13", "csrf_token": token})
    assert res.status_code == 422
    assert "Write the month as YYYY-MM." in res.get_data(as_text=True)
    assert (
        client.post(f"{url}/bill", data={"month": "2026-10", "csrf_token": token}).status_code
        == 302
    )
    assert "<h3>2026-10:" in client.get(url).get_data(as_text=True)
    other = {**copy.deepcopy(DOC), "name": "lab", "packages": []}
    assert put(planned.api("admin"), other).status_code == 200
    res = client.post(
        f"{url}/settings", data={"plan": "lab", "package": "lab-100", "csrf_token": token}
    )
    assert res.status_code == 422  # lab-100 is a package of another plan
    assert "Price plan standard, package lab-100." in client.get(url).get_data(as_text=True)
    res = client.post(f"{url}/settings", data={"plan": "lab", "package": "", "csrf_token": token})
    assert res.status_code == 302
    assert "Price plan lab." in client.get(url).get_data(as_text=True)
    assert [len(audit(planned, a)) for a in ("billing.topup", "billing.bill")] == [1, 1]
    assert len(audit(planned, "billing.account_change")) == 1


def test_the_account_page_has_no_operator_forms_for_others(planned: Env) -> None:
    client = login(planned, "erin")
    page = client.get("/usage/billing/research").get_data(as_text=True)
    assert "Balance" in page
    assert "Top up" not in page
    data = {"amount": "10", "csrf_token": csrf_of(page)}
    assert client.post("/usage/billing/research/topup", data=data).status_code == 403
    alice = login(planned, "alice")
    token = csrf_of(alice.get("/usage/billing").get_data(as_text=True))
    assert alice.get("/usage/billing/research").status_code == 404
    res = alice.post("/usage/billing/research/topup", data={"amount": "10", "csrf_token": token})
    assert res.status_code == 404
    with planned.app.app_context():
        assert audit(planned, "billing.topup") == []
