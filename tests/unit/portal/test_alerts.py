"""Alert rules and channels in the portal: platform admins manage every scope; domain and
project admins only their own tenants (checked on the server: a foreign rule is not found, a
foreign scope forbidden); plain users nothing; credentials masked everywhere; bad input
named by field; the page lists rules with their state and the recent deliveries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, update

from accounting.alert_models import AlertDelivery, AlertState
from portal.extensions import db
from portal.roles.service import role_by_name
from portal.tenancy.models import Membership
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

API = "/api/v1/alerts"
TOKEN = "k-7f3a9c1d2e4b6a8f0c2e4a6b8d0f1e3c"
SECRET = "SEC0123456789abcdef0123456789abcdef"
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def channel(name: str, level: str = "platform", tenant: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": "dingtalk",
        "url": f"https://oapi.dingtalk.com/robot/send?access_token={TOKEN}",
        "secret": SECRET,
        "scope": {"level": level, "name": tenant},
        **extra,
    }


def rule(name: str, level: str, tenant: str, channels: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "query": {"kind": "usage", "measure": "card_hours_share", "budget": 100},
        "comparator": ">=",
        "threshold": 0.9,
        "for": "10m",
        "scope": {"level": level, "name": tenant},
        "channels": channels,
        **extra,
    }


@pytest.fixture
def alerting(env: Env) -> Env:
    """victor manages vision (a project admin who is no domain admin); erin (research) and
    tina (teaching) each have a channel and a rule; the platform has its own."""
    with env.app.app_context():
        db.session.execute(
            update(Membership)
            .where(Membership.user_id == env.world.users["victor"])
            .values(role_id=role_by_name(db.session, "manager").id)
        )
        db.session.commit()
    admin, erin, tina = env.api("admin"), env.api("erin"), env.api("tina")
    for who, ch, ru in (
        (admin, channel("ops"), rule("pools", "platform", "", ["ops"])),
        (erin, channel("research-bot", "domain", "research"), None),
        (tina, channel("teaching-bot", "domain", "teaching"), None),
    ):
        res = who.post(f"{API}/channels", json=ch)
        assert res.status_code == 201, res.json
        if ru:
            ru["query"] = {"kind": "usage", "measure": "pool_free_cards"}
            ru["comparator"], ru["threshold"] = "<=", 0
            assert who.post(f"{API}/rules", json=ru).status_code == 201
    res = erin.post(f"{API}/rules", json=rule("nlp-budget", "project", "nlp", ["research-bot"]))
    assert res.status_code == 201, res.json
    res = tina.post(f"{API}/rules", json=rule("cs101-budget", "project", "cs101", ["teaching-bot"]))
    assert res.status_code == 201, res.json
    return env


def names(res: Any) -> list[str]:
    assert res.status_code == 200, res.json
    return sorted(x["name"] for x in res.json)


def test_each_admin_sees_the_rules_and_channels_of_their_own_scope(alerting: Env) -> None:
    assert names(alerting.api("admin").get(f"{API}/rules")) == [
        "cs101-budget",
        "nlp-budget",
        "pools",
    ]
    assert names(alerting.api("erin").get(f"{API}/rules")) == ["nlp-budget"]
    assert names(alerting.api("tina").get(f"{API}/rules")) == ["cs101-budget"]
    assert names(alerting.api("erin").get(f"{API}/channels")) == ["research-bot"]
    assert names(alerting.api("victor").get(f"{API}/rules")) == []  # research's, not vision's
    assert names(alerting.api("alice").get(f"{API}/rules")) == []
    assert names(alerting.api("alice").get(f"{API}/channels")) == []


def test_another_tenants_rule_is_not_found_and_cannot_be_changed(alerting: Env) -> None:
    tina = alerting.api("tina")
    assert tina.get(f"{API}/rules/nlp-budget").status_code == 404
    body = rule("nlp-budget", "project", "cs101", ["teaching-bot"])
    assert tina.put(f"{API}/rules/nlp-budget", json=body).status_code == 404
    assert tina.delete(f"{API}/rules/nlp-budget").status_code == 404
    assert tina.delete(f"{API}/channels/research-bot").status_code == 404
    # a rule in another tenant's scope, or naming another tenant's channel, is refused
    res = tina.post(f"{API}/rules", json=rule("grab", "project", "nlp", ["teaching-bot"]))
    assert res.status_code == 403
    res = tina.post(f"{API}/rules", json=rule("peek", "project", "cs101", ["research-bot"]))
    assert res.status_code == 422
    assert "research-bot" in str(res.json["errors"]["json"]["channels"])
    assert alerting.api("erin").get(f"{API}/rules/nlp-budget").status_code == 200


def test_a_project_admin_manages_alerts_of_their_project_only(alerting: Env) -> None:
    victor = alerting.api("victor")
    res = victor.post(f"{API}/channels", json=channel("vision-bot", "project", "vision"))
    assert res.status_code == 201, res.json
    res = victor.post(
        f"{API}/rules", json=rule("vision-budget", "project", "vision", ["vision-bot"])
    )
    assert res.status_code == 201, res.json
    assert res.json["state"] == "ok"
    assert res.json["for"] == 600
    for level, tenant in (("project", "nlp"), ("domain", "research"), ("user", "bob")):
        res = victor.post(f"{API}/rules", json=rule("x", level, tenant, ["vision-bot"]))
        assert res.status_code == 403, (level, res.json)
    # erin administers vision's domain: she sees it too
    assert "vision-budget" in names(alerting.api("erin").get(f"{API}/rules"))
    assert "vision-budget" not in names(alerting.api("tina").get(f"{API}/rules"))


def test_plain_users_and_tenant_admins_may_not_make_platform_or_metric_rules(
    alerting: Env,
) -> None:
    alice, erin = alerting.api("alice"), alerting.api("erin")
    res = alice.post(f"{API}/rules", json=rule("mine", "user", "alice", ["ops"]))
    assert res.status_code == 403
    assert alice.post(f"{API}/channels", json=channel("x")).status_code == 403
    metric = {
        **rule("hot", "platform", "", ["research-bot"]),
        "query": {"kind": "metric", "promql": "up == 0"},
    }
    assert erin.post(f"{API}/rules", json=metric).status_code == 403
    urgent = channel("pager", "domain", "research", urgent=True)
    assert erin.post(f"{API}/channels", json=urgent).status_code == 403


def test_a_tenant_admins_webhook_goes_only_to_the_sites_allowed_hosts(alerting: Env) -> None:
    """The scheduler posts from inside the site: a tenant may not aim it at an internal host."""
    erin, admin = alerting.api("erin"), alerting.api("admin")
    inside = channel("inside", "domain", "research", type="webhook", url="http://127.0.0.1:8080/x")
    inside.pop("secret")
    res = erin.post(f"{API}/channels", json=inside)
    assert res.status_code == 422
    assert "oapi.dingtalk.com" in str(res.json["errors"]["json"]["url"])
    assert "inside" not in names(erin.get(f"{API}/channels"))
    assert admin.post(f"{API}/channels", json=inside).status_code == 201


def test_credentials_are_masked_in_every_answer(alerting: Env) -> None:
    admin = alerting.api("admin")
    listed = admin.get(f"{API}/channels")
    text = listed.get_data(as_text=True)
    assert TOKEN not in text
    assert SECRET not in text
    ops = next(c for c in listed.json if c["name"] == "ops")
    assert ops["url"].startswith("https://")
    assert ops["secret"]
    page = login(alerting, "admin").get("/alerts").get_data(as_text=True)
    assert TOKEN not in page
    assert SECRET not in page
    audit = admin.get("/api/v1/audit").get_data(as_text=True)
    assert TOKEN not in audit
    assert SECRET not in audit


def test_bad_rules_are_named_by_field_in_the_readers_language(alerting: Env) -> None:
    admin = alerting.api("admin")
    bad = {**rule("bad", "project", "nlp", ["ops"]), "comparator": "=>", "for": "soon"}
    del bad["threshold"]
    res = admin.post(f"{API}/rules", json=bad)
    assert res.status_code == 422
    errors = res.json["errors"]["json"]
    assert set(errors) >= {"comparator", "for", "threshold"}
    assert errors["threshold"] == ["Missing data for required field."]
    zh = admin.post(f"{API}/rules", json=bad, headers={"Accept-Language": "zh-CN"})
    assert zh.json["errors"]["json"]["threshold"] != ["Missing data for required field."]
    assert admin.post(f"{API}/rules", json=rule("pools", "platform", "", ["ops"])).status_code in (
        409,
        422,
    )


def test_a_channel_in_use_is_kept(alerting: Env) -> None:
    erin = alerting.api("erin")
    res = erin.delete(f"{API}/channels/research-bot")
    assert res.status_code == 409
    assert "nlp-budget" in res.json["message"]
    assert erin.delete(f"{API}/rules/nlp-budget").status_code == 204
    assert erin.delete(f"{API}/channels/research-bot").status_code == 204


def _deliveries(env: Env) -> None:
    rows = [
        ("nlp-budget", "nlp", "project", "nlp"),
        ("cs101-budget", "cs101", "project", "cs101"),
        ("pools", "gpu/GPU", "platform", ""),
    ]
    with env.app.app_context():
        for rule_name, subject, level, tenant in rows:
            db.session.execute(
                insert(AlertDelivery).values(
                    rule=rule_name,
                    subject=subject,
                    scope_level=level,
                    scope_name=tenant,
                    channel="c",
                    kind="fire",
                    attempt=1,
                    ok=True,
                    http_status=200,
                    error="",
                    at=NOW,
                )
            )
        db.session.execute(
            insert(AlertState).values(
                rule="nlp-budget",
                subject="nlp",
                scope_level="project",
                scope_name="nlp",
                state="firing",
                since=NOW,
                fired_at=NOW,
                value=0.95,
                updated_at=NOW,
            )
        )
        db.session.commit()


def test_deliveries_and_states_show_to_their_tenants_only(alerting: Env) -> None:
    _deliveries(alerting)

    def seen(who: str) -> list[str]:
        res = alerting.api(who).get(f"{API}/deliveries")
        assert res.status_code == 200
        return sorted(d["rule"] for d in res.json)

    assert seen("admin") == ["cs101-budget", "nlp-budget", "pools"]
    assert seen("erin") == ["nlp-budget"]
    assert seen("tina") == ["cs101-budget"]
    assert seen("alice") == []
    nlp = alerting.api("erin").get(f"{API}/rules/nlp-budget").json
    assert nlp["state"] == "firing"
    assert nlp["subjects"][0]["subject"] == "nlp"


def test_the_page_lists_rules_with_state_and_saves_yaml(alerting: Env) -> None:
    _deliveries(alerting)
    client = login(alerting, "erin")
    page = client.get("/alerts").get_data(as_text=True)
    assert login(alerting, "alice").get("/alerts").status_code == 403  # manages nothing
    assert 'id="rule-nlp-budget" data-state="firing"' in page
    assert "cs101-budget" not in page  # tina's
    assert "research-bot" in page
    doc = "\n".join(
        [
            "name: vision-share",
            "query: {kind: usage, measure: card_hours_share, budget: 50}",
            'comparator: ">="',
            "threshold: 1",
            "scope: {level: project, name: vision}",
            "channels: [research-bot]",
        ]
    )
    token = csrf_of(page)
    res = client.post("/alerts", data={"csrf_token": token, "what": "rule", "document": doc})
    assert res.status_code == 302, res.get_data(as_text=True)
    assert 'id="rule-vision-share" data-state="ok"' in client.get("/alerts").get_data(as_text=True)
    bad = doc.replace('">="', '"=>"')
    res = client.post("/alerts", data={"csrf_token": token, "what": "rule", "document": bad})
    assert res.status_code == 422
    assert "<code>comparator</code>" in res.get_data(as_text=True)
    foreign = doc.replace("vision", "cs101").replace("name: cs101-share", "name: cs101-x")
    res = client.post("/alerts", data={"csrf_token": token, "what": "rule", "document": foreign})
    assert res.status_code == 403
    res = client.post(
        "/alerts/delete", data={"csrf_token": token, "what": "rule", "name": "vision-share"}
    )
    assert res.status_code == 302
    assert 'id="rule-vision-share"' not in client.get("/alerts").get_data(as_text=True)


ZH = {"Accept-Language": "zh-CN"}


def _built(**fields: Any) -> dict[str, Any]:
    return {
        "name": "nlp-half",
        "measure": "card_hours_share",
        "budget": "500",
        "cards": "GPU",
        "comparator": ">=",
        "threshold": "50",
        "minutes": "30",
        "level": "project",
        "scope_name": "nlp",
        "severity": "urgent",
        "channels": ["research-bot"],
        **fields,
    }


def test_a_rule_is_built_with_a_form_and_read_in_words(alerting: Env) -> None:
    """What used to be only YAML and read as ``card_hours_share >= 0.9 · for 1800 s``."""
    client = login(alerting, "erin")
    page = client.get("/alerts", headers=ZH).get_data(as_text=True)
    assert "本月卡时占 100 卡时预算的比例 ≥ 90%，持续 10 分钟" in page  # the fixture's nlp-budget
    rules = page[page.index("<tbody>") : page.index('id="new-rule"')]
    assert "card_hours_share" not in rules  # the rules and channels tables speak words
    assert ">=" not in rules
    token = csrf_of(page)
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built()}, headers=ZH)
    assert res.status_code == 302, res.get_data(as_text=True)
    page = client.get("/alerts", headers=ZH).get_data(as_text=True)
    row = page[page.index('id="rule-nlp-half"') :]
    row = row[: row.index("</tr>")]
    assert "本月卡时占 500 卡时预算的比例 ≥ 50%，持续 30 分钟" in row
    assert "紧急" in row
    _deliveries(alerting)  # nlp-budget firing at its value
    page = client.get("/alerts", headers=ZH).get_data(as_text=True)
    firing = page[page.index('id="rule-nlp-budget"') :]
    firing = firing[: firing.index("</tr>")]
    assert "nlp: " in firing
    assert "%" in firing.split("nlp: ")[1][:8]  # a budget's share in percent, as its condition
    rules = {r["name"]: r for r in alerting.api("erin").get(f"{API}/rules").json}
    built = rules["nlp-half"]
    assert built["query"] == {"kind": "usage", "measure": "card_hours_share", "budget": 500.0}
    assert (built["threshold"], built["for"], built["severity"]) == (0.5, 1800, "urgent")
    # the same name replaces; card-hours need no budget
    data = _built(measure="card_hours", comparator=">", threshold="400", budget="")
    res = client.post("/alerts/rules", data={"csrf_token": token, **data})
    assert res.status_code == 302
    built = {r["name"]: r for r in alerting.api("erin").get(f"{API}/rules").json}["nlp-half"]
    assert built["query"] == {"kind": "usage", "measure": "card_hours"}
    en = client.get("/alerts").get_data(as_text=True)
    assert "card-hours used this month &gt; 400, for 30 minutes" in en
    # money left: the manager's warning before the balance runs out
    data = _built(name="nlp-money", measure="balance_left", comparator="<", threshold="100")
    res = client.post("/alerts/rules", data={"csrf_token": token, **data, "budget": ""})
    assert res.status_code == 302
    en = client.get("/alerts").get_data(as_text=True)
    assert "the money left after this month&#39;s charges so far (yuan) &lt; 100" in en
    # a pool's free cards are the platform's: said at the scope's field
    data = _built(measure="pool_free_cards", cards="NPU", comparator="<", threshold="2")
    res = client.post("/alerts/rules", data={"csrf_token": token, **data})
    assert res.status_code == 422
    assert "Pools belong to the platform" in res.get_data(as_text=True)


def test_the_builder_names_bad_fields_and_refuses_foreign_scopes(alerting: Env) -> None:
    client = login(alerting, "erin")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built(budget="")}, headers=ZH)
    assert res.status_code == 422  # a share needs a budget: said at the budget's field
    page = res.get_data(as_text=True)
    budget = page[page.index('name="budget"') :]
    assert '<span class="error">' in budget[: budget.index("</label>") + 80]
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built(scope_name="cs101")})
    assert res.status_code == 403  # teaching's project: not erin's
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built(threshold="lots")})
    assert res.status_code == 422
    names = [r["name"] for r in alerting.api("erin").get(f"{API}/rules").json]
    assert "nlp-half" not in names  # nothing saved by a refused form


def test_deleting_a_rule_asks_first(alerting: Env) -> None:
    page = login(alerting, "erin").get("/alerts").get_data(as_text=True)
    row = page[page.index('id="rule-nlp-budget"') :]
    row = row[: row.index("</tr>")]
    assert '<details class="confirm">' in row
    assert 'name="name" value="nlp-budget"' in row
    assert "Delete the alert rule nlp-budget?" in row
