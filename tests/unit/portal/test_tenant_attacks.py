"""A hostile tenant against billing, quotas, sharing and the alert builder: every test acts as
one user of the test world (with ids and names reused, tenants deleted and made again, roles
and memberships taken away between requests) and tries to read or change what is not theirs,
through the API and the pages alike. Each test is a defence that must hold."""

# ruff: noqa: F811, PT018  (imported fixtures; one-line checks)
from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select

from accounting import billing as acct_billing
from accounting.alert_eval import Facts, observe
from accounting.alert_models import AlertRuleRow
from accounting.alert_rules import load_rule
from accounting.billing_models import BillingAccount, Price, PricePlan
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal.extensions import db
from portal.roles.models import Role
from portal.roles.service import role_by_name
from portal.tenancy.models import DomainAdmin, GroupMember, Membership
from tests.unit.accounting.builders import acct
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_alerts import _built, alerting  # noqa: F401  (fixture)
from tests.unit.portal.test_datasets import configure, make_dataset
from tests.unit.portal.test_pages import csrf_of, login
from tests.unit.portal.test_registry import make_model, reg  # noqa: F401  (fixture)

NOW = datetime(2026, 10, 20, 12, tzinfo=UTC)
DAY = datetime(2026, 10, 5, 9, tzinfo=UTC)
TOPO = Topology(
    nodes={"gpu1": NodeCards("a100", 32)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)
TENANTS = ("cs101", "nlp", "research", "teaching", "vision")
NOTE = "top-up-note-SECRET"  # a ledger entry's note: only the account's managers may read it


def _jobs(*jobs: Any) -> None:
    ingest(db.engine, [u for j in jobs if (u := meter(j, TOPO)) is not None])


@pytest.fixture
def money(env: Env, monkeypatch: pytest.MonkeyPatch) -> Env:
    """An account per domain and per project, each topped up (a ledger entry with a note) and
    with a posted bill for September; October's jobs of several users in several projects."""
    monkeypatch.setitem(env.app.config, "CLOCK", lambda: NOW)
    sept = datetime(2026, 9, 3, 9, tzinfo=UTC)
    with env.app.app_context():
        s = db.session
        plan = PricePlan(name="std", currency="CNY", storage_price=Decimal(0))
        s.add(plan)
        s.flush()
        s.add(Price(plan_id=plan.id, resource="gpu", model="", rate=Decimal("1.00")))
        for tenant in TENANTS:
            s.add(BillingAccount(tenant=tenant, plan_id=plan.id))
        s.commit()
        for tenant in TENANTS:
            acct_billing.top_up(s, tenant, Decimal("1000.00"), "admin", f"{NOTE}-{tenant}")
        _jobs(
            acct(1, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=3, start=sept, account="nlp"),
            acct(
                2,
                "cpu=1,gres/gpu=1,gres/gpu:a100=1",
                hours=3,
                start=sept,
                account="vision",
                user="bob",
            ),
        )
        for tenant in ("nlp", "vision"):
            acct_billing.post_bill(s, tenant, datetime(2026, 9, 1, tzinfo=UTC), "admin")
        _jobs(
            # nlp in October: alice 10 h, gina 2 h, sam 4 h; alice also 7 h in vision
            acct(11, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=10, start=DAY, account="nlp"),
            acct(
                12,
                "cpu=1,gres/gpu=1,gres/gpu:a100=1",
                hours=2,
                start=DAY,
                account="nlp",
                user="gina",
            ),
            acct(
                13,
                "cpu=1,gres/gpu=1,gres/gpu:a100=1",
                hours=4,
                start=DAY,
                account="nlp",
                user="sam",
            ),
            acct(14, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=7, start=DAY, account="vision"),
            acct(
                15,
                "cpu=1,gres/gpu=1,gres/gpu:a100=1",
                hours=5,
                start=DAY,
                account="vision",
                user="bob",
            ),
            acct(
                16,
                "cpu=1,gres/gpu=1,gres/gpu:a100=1",
                hours=1,
                start=DAY,
                account="cs101",
                user="dave",
            ),
        )
    return env


# ---------------------------------------------------------------------- billing: who sees what
#: user -> {tenant: "full" | "partial"}; every other tenant must be 404
SEES: dict[str, dict[str, str]] = {
    "admin": dict.fromkeys(TENANTS, "full"),
    "alice": {"nlp": "partial"},
    "bob": {"vision": "partial"},
    "victor": {"vision": "partial"},  # viewer: project.read
    "gina": {"nlp": "partial"},  # viewer through a group
    "sam": {},  # jobs.submit only: no project.read
    "dave": {"cs101": "partial"},
    "carol": {"cs101": "full"},  # manager of cs101 (no domain admin in the test world)
    "erin": {"research": "full", "nlp": "full", "vision": "full"},
    "tina": {"teaching": "full", "cs101": "full"},
    "nobody": {},
}


@pytest.mark.parametrize("who", sorted(SEES))
def test_each_user_sees_exactly_their_accounts_by_every_route(money: Env, who: str) -> None:
    api = money.api(who)
    listed = api.get("/api/v1/usage/billing")
    assert listed.status_code == 200
    assert sorted(a["tenant"] for a in listed.json) == sorted(SEES[who])
    overview = api.get("/usage/billing").get_data(as_text=True)
    for tenant in TENANTS:
        res = api.get(f"/api/v1/usage/billing/{tenant}")
        page = api.get(f"/usage/billing/{tenant}")
        text = page.get_data(as_text=True)
        shown = SEES[who].get(tenant)
        if shown is None:
            assert res.status_code == 404, (who, tenant, res.json)
            assert page.status_code == 404, (who, tenant)
            assert f"{NOTE}-{tenant}" not in text
            assert f'href="/usage/billing/{tenant}"' not in overview
            continue
        assert res.status_code == 200 and page.status_code == 200, (who, tenant)
        assert res.json["full"] is (shown == "full")
        if shown == "partial":
            assert res.json["bills"] == [] and res.json["ledger"] == []
            assert NOTE not in text
            assert "Income and expense" not in text
            assert "2026-09" not in text  # the posted bill's month
            assert "Top up" not in text
        else:
            assert res.json["ledger"], (who, tenant)
            assert f"{NOTE}-{tenant}" in text


@pytest.mark.parametrize(
    "variant",
    [
        "NLP",
        "Nlp",
        "nlp ",
        " nlp",
        "nlp%20",
        "nlp%09",
        "nlp%00",
        "n%C4%BAp",
        "nlp/",
        "\uff4e\uff4c\uff50",
        "research",
        "vision",
        "%6Elp",
    ],
)
def test_tenant_name_variants_reach_no_foreign_account(money: Env, variant: str) -> None:
    """bob (vision) tries every spelling of nlp, and the domain above it: nothing but his
    own account answers, and no answer carries another account's figures."""
    for url in (f"/api/v1/usage/billing/{variant}", f"/usage/billing/{variant}"):
        res = money.api("bob").get(url, follow_redirects=True)
        if variant == "vision":
            assert res.status_code == 200
            continue
        assert res.status_code == 404, (url, res.status_code)
        assert NOTE not in res.get_data(as_text=True)


def test_members_never_reach_bills_ledger_or_operator_actions(money: Env) -> None:
    alice = money.api("alice")
    page_client = login(money, "alice")
    token = csrf_of(page_client.get("/usage/billing/nlp").get_data(as_text=True))
    with money.app.app_context():
        before = db.session.scalar(
            select(BillingAccount.balance).where(BillingAccount.tenant == "nlp")
        )
    # API writes: 404 (the whole account is not theirs) for their own and foreign accounts
    for tenant in ("nlp", "vision", "research"):
        assert alice.post(
            f"/api/v1/usage/billing/{tenant}/topups", json={"amount": "5"}
        ).status_code in (403, 404)
        assert alice.post(
            f"/api/v1/usage/billing/{tenant}/bills", json={"month": "2026-09"}
        ).status_code in (403, 404)
        assert alice.patch(
            f"/api/v1/usage/billing/{tenant}", json={"package": None}
        ).status_code in (403, 404)
        for action in ("topup", "bill", "settings"):
            for data in (
                {"amount": "5", "month": "2026-08", "plan": "std"},
                {"amount": "5", "month": "2026-08", "plan": "std", "csrf_token": token},
            ):
                res = page_client.post(f"/usage/billing/{tenant}/{action}", data=data)
                assert res.status_code in (400, 403, 404), (tenant, action, res.status_code)
                body = res.get_data(as_text=True)
                assert NOTE not in body
                assert "Income and expense" not in body
    assert alice.get("/api/v1/usage/billing/plans").status_code == 403
    with money.app.app_context():
        after = db.session.scalar(
            select(BillingAccount.balance).where(BillingAccount.tenant == "nlp")
        )
    assert after == before


def test_mine_is_the_callers_own_jobs_in_that_account_only(money: Env) -> None:
    """nlp's October: alice 10 h, gina 2 h, sam 4 h (1 yuan a card-hour); alice's 7 h in vision
    are not nlp's, and nobody's share names another user's jobs."""

    def month(who: str, tenant: str) -> dict[str, Any]:
        res = money.api(who).get(f"/api/v1/usage/billing/{tenant}")
        assert res.status_code == 200, (who, tenant)
        return dict(res.json["this_month"])

    nlp_alice, nlp_gina = month("alice", "nlp"), month("gina", "nlp")
    assert nlp_alice["month"] == "2026-10"
    assert Decimal(nlp_alice["total"]) == Decimal("16.00")
    assert Decimal(nlp_alice["mine"]) == Decimal("10.00")
    assert Decimal(nlp_gina["mine"]) == Decimal("2.00")
    assert Decimal(month("bob", "vision")["mine"]) == Decimal("5.00")
    assert Decimal(month("victor", "vision")["mine"]) == 0
    assert Decimal(month("erin", "research")["mine"]) == 0  # erin ran nothing
    assert money.api("sam").get("/api/v1/usage/billing/nlp").status_code == 404


def test_a_member_removed_after_loading_the_page_sees_nothing_more(money: Env) -> None:
    client = login(money, "alice")
    assert client.get("/usage/billing/nlp").status_code == 200
    with money.app.app_context():
        db.session.execute(
            delete(Membership).where(Membership.user_id == money.world.users["alice"])
        )
        db.session.commit()
    assert client.get("/usage/billing/nlp").status_code == 404
    assert money.api("alice").get("/api/v1/usage/billing/nlp").status_code == 404
    assert money.api("alice").get("/api/v1/usage/billing").json == []
    # gina loses her group: the same
    with money.app.app_context():
        db.session.execute(
            delete(GroupMember).where(GroupMember.user_id == money.world.users["gina"])
        )
        db.session.commit()
    assert money.api("gina").get("/api/v1/usage/billing/nlp").status_code == 404


def test_a_role_without_project_read_opens_no_account(money: Env) -> None:
    """A custom role that reads the quota and members but not the project itself."""
    with money.app.app_context():
        s = db.session
        role = Role(name="quota-reader", description="", permissions=["quota.read", "members.read"])
        s.add(role)
        s.flush()
        s.add(
            Membership(
                project_id=money.world.projects["vision"],
                user_id=money.world.users["nobody"],
                role_id=role.id,
            )
        )
        s.commit()
    assert money.api("nobody").get("/api/v1/usage/billing/vision").status_code == 404
    assert money.api("nobody").get("/usage/billing/vision").status_code == 404
    assert money.api("nobody").get("/api/v1/usage/billing").json == []


def test_a_project_cannot_take_a_domains_name(money: Env) -> None:
    """The domain-vs-project collision the account lookup would trip on is refused."""
    for who, domain, name in (
        ("tina", "teaching", "research"),
        ("erin", "research", "teaching"),
        ("tina", "teaching", "nlp"),
    ):
        res = money.api(who).post(
            "/api/v1/projects", json={"domain_id": money.world.domains[domain], "name": name}
        )
        assert res.status_code in (409, 422), (name, res.json)


def test_a_deleted_projects_account_is_not_inherited_by_a_new_project_of_its_name(
    money: Env,
) -> None:
    """Billing accounts, usage and Slurm's records are keyed by the tenant's *name* and outlive
    the project: research deletes vision (empty); teaching's admin may not make another project
    called vision (nor a domain), so neither tina nor a member she adds ever reads research's
    old vision account (its ledger, bills, balance or this month's charges)."""
    vision = money.world.projects["vision"]
    with money.app.app_context():
        db.session.execute(delete(Membership).where(Membership.project_id == vision))
        db.session.commit()
    res = money.api("erin").delete(f"/api/v1/projects/{vision}")
    assert res.status_code == 204, res.get_data(as_text=True)
    for who, path, body in (
        ("tina", "/api/v1/projects", {"domain_id": money.world.domains["teaching"]}),
        ("erin", "/api/v1/projects", {"domain_id": money.world.domains["research"]}),
        ("admin", "/api/v1/domains", {}),
    ):
        res = money.api(who).post(path, json={**body, "name": "vision"})
        assert res.status_code == 409, (who, path, res.json)
        assert "deleted" in res.json["message"]
    for who in ("tina", "dave", "bob"):
        assert money.api(who).get("/api/v1/usage/billing/vision").status_code == 404
        assert money.api(who).get("/usage/billing/vision").status_code == 404
    assert f"{NOTE}-vision" not in money.api("tina").get("/usage/billing").get_data(as_text=True)


# ---------------------------------------------------------------------- quotas and the job form
def _policy(tmp: Path, cross_domain: bool) -> Path:
    from slurm_plugins.policy.config import LAB_CONFIG

    text = LAB_CONFIG.read_text()
    if cross_domain:  # the site puts the course into research's cohort
        text = text.replace(
            "cs101: {nominal: {gpu: 2, npu: 2}, idle: {threshold: 5, period: 15m}}",
            "cs101: {cohort: research, nominal: {gpu: 2, npu: 2}}",
        )
    path = tmp / "policy-daemon.yaml"
    path.write_text(text)
    return path


def _each_job(page: str) -> str:
    if 'id="each-job"' not in page:
        return ""
    part = page[page.index('id="each-job"') :]
    return part[: part.index("</table>")]


def _job_limits(page: str) -> str:
    if "What one job of each project may use" not in page:
        return ""
    part = page[page.index("What one job of each project may use") :]
    return part[: part.index("</details>")]


#: user -> the projects whose per-job limits they may read on /quotas and on /jobs/new
QUOTA_ROWS = {
    "alice": ({"nlp"}, {"nlp"}),
    "bob": ({"vision"}, {"vision"}),
    "victor": ({"vision"}, set()),  # viewer: reads the quota, submits nothing
    "gina": ({"nlp"}, set()),
    "sam": (set(), {"nlp"}),  # submitter: the job form's own project only
    "dave": ({"cs101"}, {"cs101"}),
    "nobody": (set(), set()),
}


@pytest.mark.parametrize("who", sorted(QUOTA_ROWS))
def test_per_job_limits_show_only_the_readers_projects(
    env: Env, who: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(env.app.config, "POLICY_CONFIG", str(_policy(tmp_path, False)))
    client = login(env, who)
    quotas = _each_job(client.get("/quotas").get_data(as_text=True))
    form = _job_limits(client.get("/jobs/new").get_data(as_text=True))
    on_quotas, on_form = QUOTA_ROWS[who]
    for project in ("nlp", "vision", "cs101"):
        assert (f'<th scope="row">{project}</th>' in quotas) == (project in on_quotas), project
        assert (f"<b>{project}</b>" in form) == (project in on_form), project


@pytest.mark.parametrize(("cross_domain", "hidden"), [(False, "vision"), (True, "cs101")])
def test_the_lenders_list_names_no_project_the_reader_cannot_see(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cross_domain: bool, hidden: str
) -> None:
    """Foreign tenants' objects are invisible: the guarantee's 'Beyond the guarantee' cell
    counts the cohort's other projects alice cannot see (vision; or, where the site puts cs101
    in research's cohort, teaching's cs101) and never names them."""
    monkeypatch.setitem(env.app.config, "POLICY_CONFIG", str(_policy(tmp_path, cross_domain)))
    assert hidden not in {p["name"] for p in env.api("alice").get("/api/v1/projects").json}
    quotas = _each_job(login(env, "alice").get("/quotas").get_data(as_text=True))
    assert '<th scope="row">nlp</th>' in quotas
    assert hidden not in quotas, f"/quotas names {hidden} to alice: {quotas[-400:]}"


# ---------------------------------------------------------------------- the alert builder
def _rules(env: Env) -> dict[str, tuple[str, str, list[str]]]:
    with env.app.app_context():
        return {
            r.name: (r.scope_level, r.scope_name, list(r.document.get("channels") or []))
            for r in db.session.scalars(select(AlertRuleRow))
        }


FOREIGN_SCOPES = [
    ("project", "cs101"),
    ("domain", "teaching"),
    ("domain", "nlp"),  # a project's name at the domain level
    ("project", "research"),  # a domain's name at the project level
    ("project", " nlp"),
    ("project", "nlp "),
    ("project", "NLP"),
    ("project", "nlp\u200b"),
    ("project", "\uff4e\uff4c\uff50"),
    ("project", "cs101\n"),
    ("domain", ""),  # "each one of them": every domain
    ("project", ""),
    ("platform", ""),
    ("user", "alice"),
    ("user", ""),
]


@pytest.mark.parametrize(("level", "name"), FOREIGN_SCOPES)
@pytest.mark.parametrize("measure", ["card_hours", "balance_left"])
def test_the_builder_saves_no_rule_outside_the_callers_scopes(
    alerting: Env,
    level: str,
    name: str,
    measure: str,
) -> None:
    before = _rules(alerting)
    client = login(alerting, "erin")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    data = _built(
        name="hostile",
        measure=measure,
        budget="",
        comparator="<",
        threshold="100",
        level=level,
        scope_name=name,
    )
    res = client.post("/alerts/rules", data={"csrf_token": token, **data})
    after = _rules(alerting)
    if res.status_code == 302:  # saved: it must be in one of erin's own scopes, exactly
        assert after["hostile"][:2] in {
            ("project", "nlp"),
            ("project", "vision"),
            ("domain", "research"),
        }, after["hostile"]
    else:
        assert res.status_code in (403, 422), res.status_code
        assert after == before


@pytest.mark.parametrize("channel", ["teaching-bot", "ops", "no-such"])
def test_the_builder_names_no_channel_the_caller_cannot_see(
    alerting: Env,
    channel: str,
) -> None:
    before = _rules(alerting)
    client = login(alerting, "erin")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built(channels=[channel])})
    assert res.status_code == 422
    assert _rules(alerting) == before
    # the YAML form and the API: the same answer
    doc = (
        "name: nlp-x\nquery: {kind: usage, measure: card_hours}\ncomparator: '>'\n"
        f"threshold: 1\nscope: {{level: project, name: nlp}}\nchannels: [{channel}]\n"
    )
    res = client.post("/alerts", data={"csrf_token": token, "what": "rule", "document": doc})
    assert res.status_code == 422
    api = alerting.api("erin").post(
        "/api/v1/alerts/rules",
        json={
            "name": "nlp-y",
            "query": {"kind": "usage", "measure": "card_hours"},
            "comparator": ">",
            "threshold": 1,
            "scope": {"level": "project", "name": "nlp"},
            "channels": [channel],
        },
    )
    assert api.status_code == 422
    assert _rules(alerting) == before


@pytest.mark.parametrize("name", ["cs101-budget", "pools"])
def test_a_rule_named_like_another_tenants_does_not_replace_it(
    alerting: Env,
    name: str,
) -> None:
    before = _rules(alerting)
    client = login(alerting, "erin")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    res = client.post("/alerts/rules", data={"csrf_token": token, **_built(name=name)})
    assert res.status_code == 409
    assert _rules(alerting) == before
    res = client.post(
        "/alerts",
        data={
            "csrf_token": token,
            "what": "rule",
            "document": f"name: {name}\nquery: {{kind: usage, measure: card_hours}}\n"
            "comparator: '>'\nthreshold: 1\nscope: {level: project, name: nlp}\n"
            "channels: [research-bot]\n",
        },
    )
    assert res.status_code == 409
    put = alerting.api("erin").put(
        f"/api/v1/alerts/rules/{name}",
        json={
            "name": name,
            "query": {"kind": "usage", "measure": "card_hours"},
            "comparator": ">",
            "threshold": 1,
            "scope": {"level": "project", "name": "nlp"},
            "channels": ["research-bot"],
        },
    )
    assert put.status_code == 404
    assert _rules(alerting) == before


def test_no_delete_of_another_tenants_rule_or_channel(alerting: Env) -> None:
    before = _rules(alerting)
    client = login(alerting, "erin")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    for what, name in (
        ("rule", "cs101-budget"),
        ("rule", "pools"),
        ("channel", "teaching-bot"),
        ("channel", "ops"),
        ("", "cs101-budget"),
        ("RULE", "cs101-budget"),
    ):
        res = client.post("/alerts/delete", data={"csrf_token": token, "what": what, "name": name})
        assert res.status_code == 404, (what, name, res.status_code)
    # without the CSRF token, even erin's own rule stays
    res = client.post("/alerts/delete", data={"what": "rule", "name": "nlp-budget"})
    assert res.status_code == 400
    assert _rules(alerting) == before
    channels = {c["name"] for c in alerting.api("admin").get("/api/v1/alerts/channels").json}
    assert {"teaching-bot", "ops", "research-bot"} <= channels


def test_the_builder_needs_csrf_and_a_scope_admin(alerting: Env) -> None:
    before = _rules(alerting)
    erin = login(alerting, "erin")
    res = erin.post("/alerts/rules", data=_built(name="no-csrf"))
    assert res.status_code == 400
    alice = login(alerting, "alice")  # a member of nlp, no admin of anything
    token = csrf_of(alice.get("/jobs/new").get_data(as_text=True))
    res = alice.post(
        "/alerts/rules", data={"csrf_token": token, **_built(name="alice-rule", channels=[])}
    )
    assert res.status_code in (403, 422)
    res = alice.post(
        "/alerts/delete", data={"csrf_token": token, "what": "rule", "name": "nlp-budget"}
    )
    assert res.status_code in (403, 404)
    assert _rules(alerting) == before


def test_a_manager_demoted_after_loading_the_page_changes_nothing(
    alerting: Env,
) -> None:
    """victor manages vision in the fixture: he loads the page, then is made a viewer."""
    res = alerting.api("victor").post(
        "/api/v1/alerts/channels",
        json={
            "name": "vision-mail",
            "type": "email",
            "recipients": ["victor@example.org"],
            "scope": {"level": "project", "name": "vision"},
        },
    )
    assert res.status_code == 201, res.json
    client = login(alerting, "victor")
    token = csrf_of(client.get("/alerts").get_data(as_text=True))
    res = client.post(
        "/alerts/rules",
        data={
            "csrf_token": token,
            **_built(name="vision-own", scope_name="vision", channels=["vision-mail"]),
        },
    )
    assert res.status_code == 302, res.get_data(as_text=True)
    with alerting.app.app_context():
        db.session.execute(
            Membership.__table__.update()
            .where(Membership.user_id == alerting.world.users["victor"])
            .values(role_id=role_by_name(db.session, "viewer").id)
        )
        db.session.commit()
    before = _rules(alerting)
    res = client.post(
        "/alerts/rules",
        data={
            "csrf_token": token,
            **_built(name="vision-late", scope_name="vision", channels=["vision-mail"]),
        },
    )
    assert res.status_code == 403
    res = client.post(
        "/alerts/rules",
        data={
            "csrf_token": token,
            **_built(
                name="vision-own", scope_name="vision", channels=["vision-mail"], threshold="1"
            ),
        },
    )
    assert res.status_code == 403
    res = client.post(
        "/alerts/delete", data={"csrf_token": token, "what": "rule", "name": "vision-own"}
    )
    assert res.status_code in (403, 404)
    assert _rules(alerting) == before


def test_a_balance_rule_watches_only_the_account_it_names() -> None:
    facts = Facts(
        month=NOW,
        balances={
            "nlp": Decimal("10"),
            "vision": Decimal("20"),
            "research": Decimal("30"),
            "cs101": Decimal("40"),
        },
    )

    def subjects(level: str, name: str) -> list[str]:
        rule = load_rule(
            {
                "name": "m",
                "query": {"kind": "usage", "measure": "balance_left"},
                "comparator": "<",
                "threshold": 100,
                "scope": {"level": level, "name": name},
                "channels": ["x"],
            }
        )
        return [o.subject for o in observe(rule, facts)]

    assert subjects("project", "nlp") == ["nlp"]
    assert subjects("domain", "research") == ["research"]  # not its projects', not teaching's
    assert subjects("project", "NLP") == []
    assert subjects("project", "nlp ") == []


def test_deleting_a_channel_names_no_rule_the_caller_cannot_see(
    alerting: Env,
) -> None:
    """A channel in use is kept, and the refusal names only the rules the caller may see; the
    rules of scopes they do not administer are counted, not named."""
    with alerting.app.app_context():
        db.session.execute(
            Membership.__table__.update()
            .where(Membership.user_id == alerting.world.users["alice"])
            .values(role_id=role_by_name(db.session, "manager").id)
        )
        db.session.commit()
    alice = alerting.api("alice")
    res = alice.post(
        "/api/v1/alerts/channels",
        json={
            "name": "nlp-mail",
            "type": "email",
            "recipients": ["alice@example.org"],
            "scope": {"level": "project", "name": "nlp"},
        },
    )
    assert res.status_code == 201, res.json
    res = alerting.api("admin").post(
        "/api/v1/alerts/rules",
        json={
            "name": "ops-private-watch",
            "query": {"kind": "usage", "measure": "card_hours"},
            "comparator": ">",
            "threshold": 1,
            "scope": {"level": "domain", "name": "teaching"},
            "channels": ["nlp-mail"],
        },
    )
    assert res.status_code == 201, res.json
    assert "ops-private-watch" not in {r["name"] for r in alice.get("/api/v1/alerts/rules").json}
    res = alice.delete("/api/v1/alerts/channels/nlp-mail")
    assert res.status_code == 409
    assert "ops-private-watch" not in res.get_data(as_text=True), res.json


# ---------------------------------------------------------------------- shares
@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


#: who a share of dave's private cs101 dataset with the project nlp reaches: its owner, the
#: platform admin and nlp's readers (alice; gina through her group) -- not sam (jobs.submit
#: only), not erin (research's admin: project.read on nlp, but through no role of hers)
NLP_SHARE_REACHES = {"admin", "alice", "gina", "dave"}
#: a private model is also its project's managers' (carol; tina as teaching's admin)
NLP_MODEL_SHARE_REACHES = NLP_SHARE_REACHES | {"carol", "tina"}


def test_a_dataset_shared_with_a_project_reaches_its_readers_only(env: Env, store: Path) -> None:
    ds = make_dataset(env, "dave", "cs101", name="shared-cats", visibility="private")
    res = env.api("dave").post(
        f"/api/v1/datasets/{ds}/shares",
        json={"grantee_kind": "project", "grantee_id": env.world.projects["nlp"]},
    )
    assert res.status_code == 201, res.json
    for who in (
        "admin",
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "gina",
        "sam",
        "tina",
        "victor",
        "nobody",
    ):
        one = env.api(who).get(f"/api/v1/datasets/{ds}")
        listed = {d["id"] for d in env.api(who).get("/api/v1/datasets").json}
        reaches = who in NLP_SHARE_REACHES
        assert (one.status_code == 200) == reaches, (who, one.status_code)
        assert (ds in listed) == reaches, who
        if not reaches:
            assert one.status_code == 404
    with env.app.app_context():
        from portal.datasets.models import Dataset
        from portal.datasets.unix import readers

        allowed = readers(db.session, db.session.get(Dataset, ds))
    assert allowed is not None
    assert "sam" not in allowed and "victor" not in allowed and "bob" not in allowed
    assert {"alice", "gina"} <= set(allowed)
    # alice leaves nlp: the share no longer reaches her
    with env.app.app_context():
        db.session.execute(delete(Membership).where(Membership.user_id == env.world.users["alice"]))
        db.session.commit()
    assert env.api("alice").get(f"/api/v1/datasets/{ds}").status_code == 404
    assert ds not in {d["id"] for d in env.api("alice").get("/api/v1/datasets").json}


def test_a_model_shared_with_a_project_reaches_its_readers_only(reg: Env) -> None:
    model = make_model(reg, "dave", "cs101", visibility="private")
    res = reg.api("dave").post(
        f"/api/v1/models/{model}/shares",
        json={"grantee_kind": "project", "grantee_id": reg.world.projects["nlp"]},
    )
    assert res.status_code == 201, res.json
    for who in (
        "admin",
        "alice",
        "bob",
        "carol",
        "dave",
        "erin",
        "gina",
        "sam",
        "tina",
        "victor",
        "nobody",
    ):
        one = reg.api(who).get(f"/api/v1/models/{model}")
        listed = {m["id"] for m in reg.api(who).get("/api/v1/models").json}
        reaches = who in NLP_MODEL_SHARE_REACHES
        assert (one.status_code == 200) == reaches, (who, one.status_code)
        assert (model in listed) == reaches, who


def test_a_domain_share_does_not_pass_to_a_later_domain_with_the_same_id(
    env: Env, store: Path
) -> None:
    """Ids reused (SQLite gives a deleted domain's id to the next one): a share with a domain
    goes with the domain, so the new domain that takes its id gets nothing of it."""
    admin = env.api("admin")
    res = admin.post("/api/v1/domains", json={"name": "partners"})
    assert res.status_code == 201, res.json
    old = res.json["id"]
    ds = make_dataset(env, "alice", "nlp", name="for-partners", visibility="private")
    res = env.api("alice").post(
        f"/api/v1/datasets/{ds}/shares", json={"grantee_kind": "domain", "grantee_id": old}
    )
    assert res.status_code == 201, res.json
    assert admin.delete(f"/api/v1/domains/{old}").status_code == 204
    res = admin.post("/api/v1/domains", json={"name": "strangers"})
    assert res.status_code == 201, res.json
    new = res.json["id"]
    with env.app.app_context():
        db.session.add(DomainAdmin(domain_id=new, user_id=env.world.users["nobody"]))
        db.session.commit()
    assert env.api("nobody").get(f"/api/v1/datasets/{ds}").status_code == 404, (
        f"the share with deleted domain {old} reaches new domain {new}'s admin"
    )
