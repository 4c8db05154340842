"""Two admins editing one object: a GET answers the object's ETag; an update sent with the
ETag the admin read is applied, one sent with an ETag someone else's update made stale is
refused with 412 in the error envelope and changes nothing (not the database, not the audit
log, not Slurm). The pages' forms carry the version they were rendered from, so a save from
a stale page is refused with a message saying what to do."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import func, select
from werkzeug.test import TestResponse

from portal.audit.models import AuditEvent
from portal.extensions import db
from portal.identity.models import User
from portal.tenancy.models import Membership
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login
from tests.unit.portal.test_registry import make_model, reg  # noqa: F401 - the fixture

API = "/api/v1"


def stale(r: TestResponse) -> None:
    """The refusal of a stale update: 412 in the envelope, telling the user to reload."""
    assert r.status_code == 412, r.get_data(as_text=True)
    assert r.json is not None
    assert r.json["code"] == 412
    assert r.json["error"] == "precondition_failed"
    assert "Reload" in r.json["message"]


def audited(env: Env, action: str) -> int:
    with env.app.app_context():
        stmt = select(func.count()).select_from(AuditEvent).where(AuditEvent.action == action)
        return db.session.scalar(stmt) or 0


def promote(env: Env, name: str) -> None:
    """A second platform admin (the world has one)."""
    with env.app.app_context():
        user = db.session.get(User, env.world.users[name])
        assert user is not None
        user.is_platform_admin = True
        db.session.commit()


def race(
    a: FlaskClient,
    b: FlaskClient,
    url: str,
    write: Callable[[FlaskClient, dict[str, str]], TestResponse],
    ok: int = 200,
) -> tuple[str, TestResponse]:
    """Both admins read ``url``; ``a`` writes with the ETag it read; then ``b`` writes with
    the same, now stale, ETag. Returns that ETag and ``b``'s answer."""
    first, second = a.get(url), b.get(url)
    assert first.status_code == second.status_code == 200, first.json
    etag = first.headers["ETag"]
    assert second.headers["ETag"] == etag  # one object, one version
    r = write(a, {"If-Match": etag})
    assert r.status_code == ok, r.get_data(as_text=True)
    return etag, write(b, {"If-Match": etag})


def test_a_quota_saved_with_a_stale_etag_is_refused_and_nothing_is_lost(env: Env) -> None:
    url = f"{API}/projects/{env.world.projects['nlp']}/quota"
    admin, erin = env.api("admin"), env.api("erin")
    sent_before = len(env.slurm.applied)

    def put(gpus: int) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        return lambda c, h: c.put(url, json={"gpus": gpus, "cpus": 16 * gpus}, headers=h)

    first, second = admin.get(url), erin.get(url)
    etag = first.headers["ETag"]
    assert second.headers["ETag"] == etag
    saved = put(4)(admin, {"If-Match": etag})
    assert saved.status_code == 200, saved.json
    assert saved.headers["ETag"] not in (etag, None)
    assert saved.headers["ETag"] == admin.get(url).headers["ETag"]  # the new version
    applied = len(env.slurm.applied)
    assert applied > sent_before

    stale(put(2)(erin, {"If-Match": etag}))
    assert admin.get(url).json == {"gpus": 4, "cpus": 64, "shards": None, "npus": None}
    assert audited(env, "quota.project") == 1
    assert len(env.slurm.applied) == applied  # Slurm was not told anything either

    fresh = erin.get(url).headers["ETag"]  # reading again and retrying is the way out
    assert put(2)(erin, {"If-Match": fresh}).status_code == 200
    assert erin.get(url).json["gpus"] == 2


def test_a_get_with_the_current_etag_is_not_modified(env: Env) -> None:
    url = f"{API}/projects/{env.world.projects['nlp']}/quota"
    etag = env.api("erin").get(url).headers["ETag"]
    assert env.api("erin").get(url, headers={"If-None-Match": etag}).status_code == 304
    assert env.api("erin").get(url, headers={"If-None-Match": '"other"'}).status_code == 200


def test_without_if_match_an_update_applies_as_before(env: Env) -> None:
    """``If-Match`` is optional: clients that never read the object keep working."""
    url = f"{API}/projects/{env.world.projects['nlp']}/quota"
    assert env.api("admin").put(url, json={"gpus": 4}).status_code == 200
    assert env.api("erin").put(url, json={"gpus": 2}).status_code == 200
    assert env.api("admin").get(url).json["gpus"] == 2


def test_a_dry_run_answers_the_unchanged_version(env: Env) -> None:
    url = f"{API}/projects/{env.world.projects['nlp']}/quota"
    etag = env.api("erin").get(url).headers["ETag"]
    r = env.api("erin").put(f"{url}?dry_run=true", json={"gpus": 3}, headers={"If-Match": etag})
    assert r.status_code == 200
    assert r.headers["ETag"] == etag


def _version(page: str, row: str) -> str:
    """The version the form of one table row (``id="project-3"``) was rendered with."""
    m = re.search(rf'id="{row}".*?name="version" value="([0-9a-f]+)"', page, re.S)
    assert m, f"no version in the form of {row}"
    return m.group(1)


def test_the_quota_page_refuses_a_save_from_a_page_shown_before_another_save(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    admin, erin = login(env, "admin"), login(env, "erin")
    page_a = admin.get("/quotas").get_data(as_text=True)
    page_b = erin.get("/quotas").get_data(as_text=True)
    row = f"project-{nlp}"
    assert _version(page_a, row) == _version(page_b, row)

    def save(client: FlaskClient, page: str, gpus: str) -> TestResponse:
        form = {"gpus": gpus, "shards": "", "npus": "", "cpus": ""}
        form |= {"csrf_token": csrf_of(page), "version": _version(page, row)}
        return client.post(f"/quotas/projects/{nlp}", data=form, follow_redirects=True)

    assert "The quota is saved" in save(admin, page_a, "4").get_data(as_text=True)
    refused = save(erin, page_b, "2").get_data(as_text=True)
    assert "Someone else changed the quota of nlp since this page was shown" in refused
    assert env.api("admin").get(f"{API}/projects/{nlp}/quota").json["gpus"] == 4
    assert audited(env, "quota.project") == 1
    # the page the refusal shows is current: saving from it works
    assert "The quota is saved" in save(erin, refused, "2").get_data(as_text=True)
    assert env.api("admin").get(f"{API}/projects/{nlp}/quota").json["gpus"] == 2


PLAN = {
    "name": "lab",
    "currency": "CNY",
    "prices": [{"resource": "gpu", "rate": "8.00"}],
    "packages": [],
}


def test_a_price_plan_replaced_from_a_stale_copy_is_refused(env: Env) -> None:
    promote(env, "erin")
    admin, erin = env.api("admin"), env.api("erin")
    url = f"{API}/usage/billing/plans/lab"
    absent = admin.put(url, json=PLAN, headers={"If-Match": '"0123"'})
    assert absent.status_code == 412  # an ETag of a plan that is not there cannot match
    assert admin.put(url, json=PLAN).status_code == 200
    events = audited(env, "billing.plan")

    def put(rate: str) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        doc = {**PLAN, "prices": [{"resource": "gpu", "rate": rate}]}
        return lambda c, h: c.put(url, json=doc, headers=h)

    _, refused = race(admin, erin, url, put("9.00"))
    stale(refused)
    assert admin.get(url).json["prices"][0]["rate"] == "9.00"
    assert audited(env, "billing.plan") == events + 1


def _editor_field(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" type="hidden" value="([^"]*)"', page)
    assert m, f"no {name} field in the editor"
    return m.group(1)


def test_the_plan_editor_refuses_a_stale_save_and_a_blind_overwrite(env: Env) -> None:
    promote(env, "erin")
    assert env.api("admin").put(f"{API}/usage/billing/plans/lab", json=PLAN).status_code == 200
    admin, erin = login(env, "admin"), login(env, "erin")
    page_a = admin.get("/usage/billing/plans/advanced?name=lab").get_data(as_text=True)
    page_b = erin.get("/usage/billing/plans/advanced?name=lab").get_data(as_text=True)
    assert _editor_field(page_a, "version") == _editor_field(page_b, "version")

    def apply(client: FlaskClient, page: str, rate: str) -> TestResponse:
        text = f"name: lab\ncurrency: CNY\nprices:\n  - {{resource: gpu, rate: '{rate}'}}\n"
        form = {"document": text, "csrf_token": csrf_of(page)}
        form |= {name: _editor_field(page, name) for name in ("opened", "version")}
        return client.post("/usage/billing/plans/advanced", data=form)

    assert apply(admin, page_a, "9.00").status_code == 302
    refused = apply(erin, page_b, "7.00")
    assert refused.status_code == 412
    assert "Someone else changed the price plan lab since you opened it" in refused.get_data(
        as_text=True
    )
    assert "7.00" in refused.get_data(as_text=True)  # the operator's text is kept
    rate = env.api("admin").get(f"{API}/usage/billing/plans/lab").json["prices"][0]["rate"]
    assert rate == "9.00"
    # the starter renamed to a plan that exists would overwrite a plan never shown: refused
    starter = erin.get("/usage/billing/plans/advanced").get_data(as_text=True)
    blind = apply(erin, starter, "1.00")
    assert blind.status_code == 409
    assert "A price plan named lab already exists" in blind.get_data(as_text=True)
    rate = env.api("admin").get(f"{API}/usage/billing/plans/lab").json["prices"][0]["rate"]
    assert rate == "9.00"


def test_a_role_changed_from_a_stale_copy_is_refused(env: Env) -> None:
    promote(env, "erin")
    admin, erin = env.api("admin"), env.api("erin")
    url = f"{API}/roles/{env.world.roles['submitter']}"

    def patch(description: str) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        return lambda c, h: c.patch(url, json={"description": description}, headers=h)

    etag, refused = race(admin, erin, url, patch("from admin"))
    stale(refused)
    stale(erin.delete(url, headers={"If-Match": etag}))  # nor deleted from the old copy
    role = admin.get(url).json
    assert role["description"] == "from admin"
    assert role["permissions"] == ["jobs.submit"]
    assert audited(env, "role.update") == 1
    assert audited(env, "role.delete") == 0


def test_a_member_changed_from_a_stale_copy_is_refused(env: Env) -> None:
    cs101, dave = env.world.projects["cs101"], env.world.users["dave"]
    url = f"{API}/projects/{cs101}/members/{dave}"
    carol, tina = env.api("carol"), env.api("tina")
    viewer, member = env.world.roles["viewer"], env.world.roles["member"]

    def patch(role: int) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        return lambda c, h: c.patch(url, json={"role_id": role}, headers=h)

    etag, refused = race(carol, tina, url, patch(viewer))
    stale(refused)
    stale(tina.delete(url, headers={"If-Match": etag}))
    assert carol.get(url).json["role_id"] == viewer
    assert audited(env, "member.update") == 1
    assert audited(env, "member.remove") == 0
    fresh = tina.get(url).headers["ETag"]
    assert patch(member)(tina, {"If-Match": fresh}).status_code == 200


def test_a_group_grant_changed_from_a_stale_copy_is_refused(env: Env) -> None:
    group, nlp = env.world.groups["nlp-readers"], env.world.projects["nlp"]
    url = f"{API}/groups/{group}/grants/{nlp}"
    admin, erin = env.api("admin"), env.api("erin")

    def put(role: str) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        body = {"project_id": nlp, "role_id": env.world.roles[role]}
        return lambda c, h: c.put(f"{API}/groups/{group}/grants", json=body, headers=h)

    etag, refused = race(admin, erin, url, put("member"))
    stale(refused)
    stale(erin.delete(url, headers={"If-Match": etag}))
    assert admin.get(url).json["role_id"] == env.world.roles["member"]
    assert audited(env, "group.grant") == 1


def _member_version(page: str, user_id: int) -> str:
    action = f"/members/{user_id}/remove"
    m = re.search(rf'action="[^"]*{action}".*?name="version" value="([0-9a-f]+)"', page, re.S)
    assert m, f"no version in the remove form of user {user_id}"
    return m.group(1)


def test_the_project_page_does_not_remove_a_member_changed_since_it_was_shown(
    env: Env,
) -> None:
    cs101, dave = env.world.projects["cs101"], env.world.users["dave"]
    tina = login(env, "tina")
    page = tina.get(f"/projects/{cs101}").get_data(as_text=True)
    r = env.api("carol").patch(
        f"{API}/projects/{cs101}/members/{dave}", json={"role_id": env.world.roles["viewer"]}
    )
    assert r.status_code == 200
    form = {"csrf_token": csrf_of(page), "version": _member_version(page, dave)}
    r = tina.post(f"/projects/{cs101}/members/{dave}/remove", data=form, follow_redirects=True)
    shown = r.get_data(as_text=True)
    assert "Someone else changed the membership of dave since this page was shown" in shown
    with env.app.app_context():
        kept = db.session.scalar(select(Membership).where(Membership.user_id == dave))
        assert kept is not None
        assert kept.role_id == env.world.roles["viewer"]
    # from the page as it is now, the removal goes through
    form = {"csrf_token": csrf_of(shown), "version": _member_version(shown, dave)}
    r = tina.post(f"/projects/{cs101}/members/{dave}/remove", data=form)
    assert r.status_code == 302
    assert audited(env, "member.remove") == 1


def test_a_model_and_a_version_changed_from_a_stale_copy_are_refused(
    reg: Env,  # noqa: F811
) -> None:
    model_id = make_model(reg)
    alice, admin = reg.api("alice"), reg.api("admin")
    url = f"{API}/models/{model_id}"

    def patch(text: str) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        return lambda c, h: c.patch(url, json={"description": text}, headers=h)

    etag, refused = race(alice, admin, url, patch("from alice"))
    stale(refused)
    stale(admin.delete(url, headers={"If-Match": etag}))
    assert admin.get(url).json["description"] == "from alice"

    version = f"{url}/versions/1"

    def tag(value: str) -> Callable[[FlaskClient, dict[str, str]], TestResponse]:
        return lambda c, h: c.patch(version, json={"tags": {"by": value}}, headers=h)

    etag, refused = race(alice, admin, version, tag("alice"))
    stale(refused)
    stale(admin.delete(version, headers={"If-Match": etag}))
    assert admin.get(version).json["tags"]["by"] == "alice"
    assert audited(reg, "model.version.update") == 1
    assert audited(reg, "model.version.delete") == 0


def test_the_document_states_the_etag_rules(env: Env) -> None:
    doc: dict[str, Any] = env.app.test_client().get(f"{API}/openapi.json").json
    if_match = doc["components"]["parameters"]["IF_MATCH"]
    assert if_match["in"] == "header"
    assert if_match["required"] is False
    quota = doc["paths"]["/api/v1/projects/{project_id}/quota"]
    assert "ETag" in quota["get"]["responses"]["200"]["headers"]
    assert "412" in quota["put"]["responses"]
    assert "428" not in quota["put"]["responses"]
