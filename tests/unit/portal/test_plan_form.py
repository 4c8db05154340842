"""The price plan form: rates per GPU and NPU model, CPU, memory, storage, packages and the
days a plan is in effect, saved as the plan document; errors on the field they are about, in
the reader's language; a save from a stale page refused; platform admins only. And the
billing pages in Chinese: bill lines in words, money in yuan."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from flask.testing import FlaskClient

from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal.extensions import db
from portal.identity.models import User
from tests.unit.accounting.builders import acct
from tests.unit.accounting.test_plans import DOC
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

URL = "/usage/billing/plans"
API = "/api/v1/usage/billing"
ZH = {"Accept-Language": "zh-CN"}


def hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" type="hidden" value="([^"]*)"', html)
    assert m, f"no {name} on the page"
    return m.group(1)


def form_of(html: str, **fields: str) -> dict[str, str]:
    """What the page posts: its token and version, and the fields given."""
    base = {k: hidden(html, k) for k in ("opened", "version")}
    return {"csrf_token": csrf_of(html), **base, "currency": "CNY", **fields}


def error_of(html: str, name: str) -> list[str]:
    """The messages shown right after the input ``name``."""
    m = re.search(
        rf'name="{name}"[^>]*>\s*</label>\s*((?:<span class="error">[^<]*</span>)+)', html
    )
    return re.findall(r'<span class="error">([^<]*)</span>', m.group(1)) if m else []


GOLD = {
    "name": "gold",
    "effective_from": "2026-01-01",
    "gpu-0-model": "a100",
    "gpu-0-rate": "12.00",
    "gpu-1-rate": "8",
    "npu-0-model": "910b",
    "npu-0-rate": "9.00",
    "cpu_rate": "0.05",
    "mem_rate": "0.01",
    "storage_price": "0.10",
    "packages-0-name": "lab-100",
    "packages-0-monthly_fee": "900",
    "packages-0-included_card_hours": "100",
}


def test_a_new_plan_is_saved_from_the_form(env: Env) -> None:
    admin = login(env, "admin")
    page = admin.get(URL).get_data(as_text=True)
    assert "<h1>New price plan</h1>" in page
    for label in ("GPU card-hour rates", "Rate per CPU core-hour", "In effect from", "Packages"):
        assert label in page
    assert '<input id="gpu-0-model"' in page  # inside its <label>: read out with the input
    res = admin.post(URL, data=form_of(page, **GOLD))
    assert res.status_code == 302, res.get_data(as_text=True)
    assert res.headers["Location"].endswith("/usage/billing#plan-gold")
    saved = env.api("admin").get(f"{API}/plans/gold").json
    assert saved["effective_from"] == "2026-01-01"
    assert "effective_until" not in saved
    assert saved["prices"] == [
        {"resource": "gpu", "model": "a100", "rate": "12.00"},
        {"resource": "gpu", "rate": "8.00"},
        {"resource": "npu", "model": "910b", "rate": "9.00"},
        {"resource": "cpu", "rate": "0.05"},
        {"resource": "mem", "rate": "0.01"},
    ]
    assert saved["packages"] == [
        {"name": "lab-100", "monthly_fee": "900.00", "included_card_hours": "100.00"}
    ]
    listing = admin.get("/usage/billing").get_data(as_text=True)
    assert "a shard (1/32 card): CN¥0.38 per hour" in listing  # 12.00 / 32, rounded
    again = admin.get(f"{URL}?name=gold").get_data(as_text=True)  # the form, filled in
    assert re.search(r'name="gpu-0-rate"[^>]* value="12.00"', again)
    assert re.search(r'name="gpu-2-rate"[^>]* value=""', again)  # a spare row for a model


def _refused(client: FlaskClient, **fields: str) -> tuple[int, str]:
    page = client.get(URL, headers=ZH).get_data(as_text=True)
    res = client.post(URL, data=form_of(page, **{**GOLD, **fields}), headers=ZH)
    return res.status_code, res.get_data(as_text=True)


def test_errors_are_shown_on_their_field_in_the_readers_language(env: Env) -> None:
    admin = login(env, "admin")
    status, html = _refused(admin, **{"gpu-1-rate": "8.5.1"})
    assert status == 422
    assert error_of(html, "gpu-1-rate") == ["必须是 &#34;12.50&#34; 这样的十进制字符串或整数。"]
    assert error_of(html, "gpu-0-rate") == []
    status, html = _refused(admin, **{"gpu-1-model": "a100"})  # a second a100 rate
    assert error_of(html, "gpu-1-rate") == ["gpu:a100 的单价重复：第 1 条单价已经设置过。"]
    status, html = _refused(admin, effective_until="2025-12-31")
    assert error_of(html, "effective_until") == ["结束日期不能早于开始日期。"]
    status, html = _refused(admin, name="a b")
    assert "只能包含字母、数字" in error_of(html, "name")[0]
    status, html = _refused(admin, **{"packages-0-monthly_fee": ""})
    assert error_of(html, "packages-0-monthly_fee") == ["缺少必填字段。"]
    assert "8.5.1" not in html  # each try starts from what was posted
    assert env.api("admin").get(f"{API}/plans").json == []  # nothing was saved


def test_a_plan_changed_since_the_page_was_opened_is_not_overwritten(env: Env) -> None:
    assert env.api("admin").put(f"{API}/plans/standard", json=DOC).status_code == 200
    with env.app.app_context():
        erin = db.session.get(User, env.world.users["erin"])
        assert erin is not None
        erin.is_platform_admin = True
        db.session.commit()
    first, second = login(env, "admin"), login(env, "erin")
    page_a = first.get(f"{URL}?name=standard").get_data(as_text=True)
    page_b = second.get(f"{URL}?name=standard", headers=ZH).get_data(as_text=True)
    fields: dict[str, Any] = {**GOLD, "name": "standard"}
    fields.pop("effective_from")
    changed = {**fields, "gpu-0-rate": "13.00"}
    assert first.post(URL, data=form_of(page_a, **changed)).status_code == 302
    res = second.post(URL, data=form_of(page_b, **{**fields, "gpu-0-rate": "1"}), headers=ZH)
    assert res.status_code == 412
    assert "在你打开价格方案 standard 之后有人修改了它" in res.get_data(as_text=True)
    rate = env.api("admin").get(f"{API}/plans/standard").json["prices"][0]["rate"]
    assert rate == "13.00"


def test_only_platform_admins_use_the_form(env: Env) -> None:
    erin = login(env, "erin")  # a domain admin
    assert erin.get(URL).status_code == 403
    token = csrf_of(erin.get("/usage/billing").get_data(as_text=True))
    assert erin.post(URL, data={**GOLD, "csrf_token": token}).status_code == 403
    admin = login(env, "admin")
    assert admin.post(URL, data=GOLD).status_code == 400  # no CSRF token
    assert env.api("admin").get(f"{API}/plans").json == []


def test_the_billing_pages_in_chinese(env: Env) -> None:
    day = datetime(2026, 10, 5, 9, tzinfo=UTC)
    topo = Topology(nodes={"gpu1": NodeCards("a100", 32)}, domains={"nlp": "research"})
    job = acct(1, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=10, start=day, account="nlp")
    with env.app.app_context():
        ingest(db.engine, [u for u in [meter(job, topo)] if u is not None])
    api = env.api("admin")
    assert api.put(f"{API}/plans/standard", json=DOC).status_code == 200
    assert (
        api.post(f"{API}/accounts", json={"tenant": "nlp", "plan": "standard"}).status_code == 201
    )
    assert api.post(f"{API}/nlp/topups", json={"amount": "1000"}).status_code == 200
    bill = api.post(f"{API}/nlp/bills", json={"month": "2026-10"}, headers=ZH).json
    assert [ln["label"] for ln in bill["bills"][0]["lines"]] == ["GPU 卡时（a100）", "CPU 核时"]
    html = login(env, "admin").get("/usage/billing/nlp", headers=ZH).get_data(as_text=True)
    assert "<h1>nlp 的计费</h1>" in html
    assert "余额 <strong>¥759.50</strong>" in html  # 1000 - 240.50
    assert '<th scope="row">GPU 卡时（a100）</th>' in html
    assert "2026-10 账单" in html
    assert "充值" in html
    index = login(env, "admin").get("/usage/billing", headers=ZH).get_data(as_text=True)
    assert "一个分片（1/32 卡）：每小时 ¥0.38" in index
