"""The roles pages: custom roles edited as permission sets by platform admins, version-checked;
built-in roles read-only; domain admins read them; members get none of it. Both languages."""

from __future__ import annotations

import re

from sqlalchemy import func, select

from portal.audit.models import AuditEvent
from portal.extensions import db
from portal.roles.models import Role
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

ZH = {"Accept-Language": "zh-CN"}


def role(env: Env, name: str) -> Role | None:
    with env.app.app_context():
        return db.session.scalar(select(Role).where(Role.name == name))


def events(env: Env) -> int:
    with env.app.app_context():
        return db.session.scalar(select(func.count()).select_from(AuditEvent)) or 0


def version_of(page: str) -> str:
    m = re.search(r'name="version" value="([0-9a-f]+)"', page)
    assert m, "no version on the page"
    return m.group(1)


def test_a_platform_admin_makes_a_role_from_checked_permissions(env: Env) -> None:
    admin = login(env, "admin")
    page = admin.get("/roles/new", headers=ZH).get_data(as_text=True)
    assert "以该项目提交作业（计入项目用量）" in page  # each permission's meaning, in Chinese
    assert 'value="jobs.submit"' in page
    r = admin.post(
        "/roles/new",
        data={
            "csrf_token": csrf_of(page),
            "name": "operator",
            "description": "runs and watches jobs",
            "permissions": ["jobs.submit", "jobs.read_all"],
        },
    )
    assert r.status_code == 302
    made = role(env, "operator")
    assert made is not None
    assert sorted(made.permissions) == ["jobs.read_all", "jobs.submit"]
    listing = admin.get("/roles").get_data(as_text=True)
    assert "See every member&#39;s jobs in the project" in listing
    # a permission that no role may hold is refused, and nothing is made
    r = admin.post(
        "/roles/new",
        data={"csrf_token": csrf_of(page), "name": "boss", "permissions": ["quota.manage"]},
    )
    assert r.status_code == 422
    assert role(env, "boss") is None


def test_a_custom_role_change_is_version_checked(env: Env) -> None:
    submitter = env.world.roles["submitter"]
    admin = login(env, "admin")
    first = admin.get(f"/roles/{submitter}").get_data(as_text=True)
    second = admin.get(f"/roles/{submitter}").get_data(as_text=True)

    def save(page: str, perms: list[str]) -> str:
        data = {
            "csrf_token": csrf_of(page),
            "version": version_of(page),
            "name": "submitter",
            "description": "submits",
            "permissions": perms,
        }
        r = admin.post(f"/roles/{submitter}", data=data, follow_redirects=True)
        return r.get_data(as_text=True)

    assert "The role submitter is saved." in save(first, ["jobs.submit", "project.read"])
    count = events(env)
    refused = save(second, ["jobs.submit"])
    assert "Someone else changed the role submitter" in refused
    changed = role(env, "submitter")
    assert changed is not None
    assert sorted(changed.permissions) == ["jobs.submit", "project.read"]
    assert events(env) == count


def test_built_in_roles_are_read_only(env: Env) -> None:
    member = env.world.roles["member"]
    admin = login(env, "admin")
    page = admin.get(f"/roles/{member}", headers=ZH).get_data(as_text=True)
    assert "内置角色，不可修改。" in page
    assert "<fieldset" not in page  # no form: a table of what it holds
    before = role(env, "member")
    assert before is not None
    perms = list(before.permissions)
    r = admin.post(
        f"/roles/{member}",
        data={"csrf_token": csrf_of(page), "name": "member", "permissions": ["jobs.cancel_all"]},
    )
    assert r.status_code == 409
    after = role(env, "member")
    assert after is not None
    assert after.permissions == perms


def test_domain_admins_read_roles_and_members_do_not(env: Env) -> None:
    erin = login(env, "erin")
    page = erin.get("/roles").get_data(as_text=True)
    assert "submitter" in page
    assert "New role" not in page
    submitter = env.world.roles["submitter"]
    detail = erin.get(f"/roles/{submitter}").get_data(as_text=True)
    assert "<fieldset" not in detail  # read-only for a domain admin
    count = events(env)
    r = erin.post("/roles/new", data={"csrf_token": csrf_of(page), "name": "mine"})
    assert r.status_code == 403
    r = erin.post(
        f"/roles/{submitter}",
        data={"csrf_token": csrf_of(page), "name": "renamed", "permissions": ["jobs.submit"]},
    )
    assert r.status_code == 403
    r = erin.post(f"/roles/{submitter}/delete", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 403
    assert role(env, "submitter") is not None
    assert role(env, "mine") is None
    assert events(env) == count
    assert login(env, "alice").get("/roles").status_code == 403


def test_a_held_role_is_not_deleted_and_a_free_one_is(env: Env) -> None:
    admin = login(env, "admin")
    submitter = env.world.roles["submitter"]
    page = admin.get(f"/roles/{submitter}").get_data(as_text=True)
    r = admin.post(
        f"/roles/{submitter}/delete",
        data={"csrf_token": csrf_of(page), "version": version_of(page)},
        follow_redirects=True,
    )
    assert "Members or groups still hold this role" in r.get_data(as_text=True)
    assert role(env, "submitter") is not None
    made = env.api("admin").post(
        "/api/v1/roles", json={"name": "spare", "permissions": ["project.read"]}
    )
    spare = made.json["id"]
    page = admin.get(f"/roles/{spare}").get_data(as_text=True)
    r = admin.post(
        f"/roles/{spare}/delete",
        data={"csrf_token": csrf_of(page), "version": version_of(page)},
        follow_redirects=True,
    )
    assert "The role spare is deleted." in r.get_data(as_text=True)
    assert role(env, "spare") is None
