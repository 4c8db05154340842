"""The users pages: platform admins manage everyone; a domain admin creates users into a
project of their domain and manages only users who belong to their domains; members get
none of it. Every refusal changes nothing; both languages."""

from __future__ import annotations

import re

from flask.testing import FlaskClient
from sqlalchemy import func, select

from portal.audit.models import AuditEvent
from portal.extensions import db
from portal.identity.models import User
from portal.tenancy.models import Membership
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

ZH = {"Accept-Language": "zh-CN"}
PASSWORD_SHOWN = re.compile(r'<code class="password">([^<]+)</code>')


def user_row(env: Env, username: str) -> User | None:
    with env.app.app_context():
        return db.session.scalar(select(User).where(User.username == username))


def audit_count(env: Env, action: str) -> int:
    with env.app.app_context():
        stmt = select(func.count()).select_from(AuditEvent).where(AuditEvent.action == action)
        return db.session.scalar(stmt) or 0


def sign_in(env: Env, username: str, password: str) -> int:
    client = env.app.test_client()
    token = csrf_of(client.get("/login").get_data(as_text=True))
    data = {"username": username, "password": password, "csrf_token": token}
    return client.post("/login", data=data).status_code


def new_user(client: FlaskClient, **fields: object) -> tuple[int, str, dict[str, str]]:
    page = client.get("/users/new").get_data(as_text=True)
    r = client.post("/users/new", data={"csrf_token": csrf_of(page), **fields}, headers=ZH)
    return r.status_code, r.get_data(as_text=True), dict(r.headers)


def test_a_domain_admin_creates_a_user_in_their_domain_in_chinese(env: Env) -> None:
    erin = login(env, "erin")
    form = erin.get("/users/new", headers=ZH).get_data(as_text=True)
    assert "新建用户" in form
    assert "平台管理员" not in form  # no platform admin box for a domain admin
    assert "cs101" not in form  # only the projects of erin's domain are offered
    nlp, member = env.world.projects["nlp"], env.world.roles["member"]
    status, page, headers = new_user(
        erin, username="lihua", display_name="李华", project_id=nlp, role_id=member
    )
    assert status == 200, page
    assert "已创建用户 lihua" in page
    assert headers["Cache-Control"] == "no-store"  # the password stays out of caches
    match = PASSWORD_SHOWN.search(page)
    assert match
    password = match.group(1)
    created = user_row(env, "lihua")
    assert created is not None
    assert (created.display_name, created.is_platform_admin) == ("李华", False)
    with env.app.app_context():
        held = db.session.scalar(
            select(Membership.role_id).where(
                Membership.user_id == created.id, Membership.project_id == nlp
            )
        )
    assert held == member
    assert any("add user lihua" in c and "Account=nlp" in c for c in env.slurm.applied[-1])
    assert sign_in(env, "lihua", password) == 302
    # erin reads it in her domain's audit log, with the new user by name
    log = erin.get("/audit?action=user.create").get_data(as_text=True)
    assert "Created a user" in log
    assert "lihua" in log
    assert erin.get(f"/users/{created.id}").status_code == 200


def test_a_domain_admin_cannot_create_outside_their_domain_or_a_platform_admin(env: Env) -> None:
    erin = login(env, "erin")
    cs101, member = env.world.projects["cs101"], env.world.roles["member"]
    status, _, _ = new_user(erin, username="sneaky", project_id=cs101, role_id=member)
    assert status == 422  # cs101 is no choice of erin's form
    assert user_row(env, "sneaky") is None
    status, _, _ = new_user(
        erin,
        username="sneaky",
        project_id=env.world.projects["nlp"],
        role_id=member,
        is_platform_admin="y",
    )
    assert status == 200
    sneaky = user_row(env, "sneaky")
    assert sneaky is not None
    assert sneaky.is_platform_admin is False  # the box is not there, and a forged one is ignored
    api = env.api("erin")
    before = audit_count(env, "user.create")
    r = api.post("/api/v1/users", json={"username": "other", "project_id": cs101})
    assert r.status_code == 404  # a project of another domain is not even visible
    r = api.post("/api/v1/users", json={"username": "other"})
    assert r.status_code == 422
    assert "project_id" in r.json["errors"]["json"]
    r = api.post(
        "/api/v1/users",
        json={
            "username": "other",
            "project_id": env.world.projects["nlp"],
            "is_platform_admin": True,
        },
    )
    assert r.status_code == 403
    assert user_row(env, "other") is None
    assert audit_count(env, "user.create") == before


def test_members_get_no_users_pages(env: Env) -> None:
    alice = login(env, "alice")
    for path in ("/users", "/users/new", f"/users/{env.world.users['alice']}", "/roles"):
        assert alice.get(path).status_code == 403, path
    page = alice.get("/").get_data(as_text=True)
    assert 'href="/users"' not in page
    r = alice.post(f"/users/{env.world.users['sam']}/password", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 403
    # a domain admin does not see another domain's users at all
    assert login(env, "erin").get(f"/users/{env.world.users['carol']}").status_code == 404


def test_a_domain_admin_leaves_users_of_other_domains_to_a_platform_admin(env: Env) -> None:
    """alice is also made a member of cs101 (teaching): erin (research) may no longer reset
    her password or deactivate her; nothing changes when she tries."""
    r = env.api("admin").post(
        f"/api/v1/projects/{env.world.projects['cs101']}/members",
        json={"username": "alice", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 201
    alice = env.world.users["alice"]
    erin = login(env, "erin")
    page = erin.get(f"/users/{alice}").get_data(as_text=True)
    assert "Reset the password" not in page
    assert "only a platform admin may change the account" in page
    assert "cs101" not in page  # teaching's membership is not erin's business
    hash_before = user_row(env, "alice").password_hash  # type: ignore[union-attr]
    token = csrf_of(page)
    assert erin.post(f"/users/{alice}/password", data={"csrf_token": token}).status_code == 403
    r = erin.post(f"/users/{alice}/active", data={"csrf_token": token, "active": "0"})
    assert r.status_code == 403
    after = user_row(env, "alice")
    assert after is not None
    assert (after.password_hash, after.active) == (hash_before, True)
    assert audit_count(env, "user.password_reset") == 0
    # the platform admin may
    admin = login(env, "admin")
    page = admin.get(f"/users/{alice}").get_data(as_text=True)
    r = admin.post(f"/users/{alice}/password", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 200
    assert PASSWORD_SHOWN.search(r.get_data(as_text=True))


def test_a_reset_shows_the_new_password_once_and_ends_the_old_one(env: Env) -> None:
    from tests.unit.portal.world import PASSWORD

    bob = env.world.users["bob"]
    erin = login(env, "erin")
    page = erin.get(f"/users/{bob}").get_data(as_text=True)
    r = erin.post(f"/users/{bob}/password", data={"csrf_token": csrf_of(page)}, headers=ZH)
    assert r.status_code == 200
    assert r.headers["Cache-Control"] == "no-store"
    body = r.get_data(as_text=True)
    assert "已重置 bob 的密码" in body
    match = PASSWORD_SHOWN.search(body)
    assert match
    assert sign_in(env, "bob", PASSWORD) == 401
    assert sign_in(env, "bob", match.group(1)) == 302
    assert match.group(1) not in erin.get(f"/users/{bob}").get_data(as_text=True)
    assert audit_count(env, "user.password_reset") == 1


def _version(page: str) -> str:
    m = re.search(r'action="/users/\d+/active".*?name="version" value="([0-9a-f]+)"', page, re.S)
    assert m
    return m.group(1)


def test_deactivation_is_version_checked_and_ends_the_sessions(env: Env) -> None:
    bob = env.world.users["bob"]
    bobs_browser = login(env, "bob")
    erin, admin = login(env, "erin"), login(env, "admin")
    page_erin = erin.get(f"/users/{bob}").get_data(as_text=True)
    page_admin = admin.get(f"/users/{bob}").get_data(as_text=True)
    assert _version(page_erin) == _version(page_admin)
    r = admin.post(
        f"/users/{bob}/active",
        data={"csrf_token": csrf_of(page_admin), "version": _version(page_admin), "active": "0"},
        follow_redirects=True,
    )
    assert "bob is deactivated" in r.get_data(as_text=True)
    assert bobs_browser.get("/").status_code == 302  # signed out
    # erin's page was shown before: her reactivation is refused, bob stays deactivated
    r = erin.post(
        f"/users/{bob}/active",
        data={"csrf_token": csrf_of(page_erin), "version": _version(page_erin), "active": "1"},
        follow_redirects=True,
    )
    assert "Someone else changed the account of bob" in r.get_data(as_text=True)
    assert user_row(env, "bob").active is False  # type: ignore[union-attr]
    fresh = erin.get(f"/users/{bob}").get_data(as_text=True)
    assert "Reactivate" in fresh
    r = erin.post(
        f"/users/{bob}/active",
        data={"csrf_token": csrf_of(fresh), "version": _version(fresh), "active": "1"},
    )
    assert r.status_code == 302
    assert user_row(env, "bob").active is True  # type: ignore[union-attr]
    assert audit_count(env, "user.update") == 2


def test_the_users_list_searches_and_shows_only_the_callers_users(env: Env) -> None:
    erin = login(env, "erin")
    page = erin.get("/users").get_data(as_text=True)
    assert ">bob<" in page
    assert ">carol<" not in page  # teaching's
    found = erin.get("/users?q=Gin").get_data(as_text=True)
    assert ">gina<" in found
    assert ">bob<" not in found
    zh = login(env, "tina").get("/users", headers=ZH).get_data(as_text=True)
    assert "按用户名、姓名或电子邮箱搜索" in zh
    assert ">dave<" in zh
    assert ">alice<" not in zh


def test_a_user_page_shows_memberships_and_roles_in_words(env: Env) -> None:
    page = login(env, "admin").get(f"/users/{env.world.users['carol']}", headers=ZH)
    text = page.get_data(as_text=True)
    assert "项目与角色" in text
    assert "cs101" in text
    assert "项目管理员" in text  # carol's built-in role "manager", in words
    english = login(env, "admin").get(f"/users/{env.world.users['carol']}").get_data(as_text=True)
    assert "Project admin" in english


def test_the_users_page_writes_need_the_csrf_token(env: Env) -> None:
    erin = login(env, "erin")
    bob = env.world.users["bob"]
    assert erin.post(f"/users/{bob}/password").status_code == 400
    assert erin.post("/users/new", data={"username": "x"}).status_code in (400, 422)
    assert user_row(env, "x") is None
