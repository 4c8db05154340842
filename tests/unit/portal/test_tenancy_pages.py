"""The tenancy pages: projects, a project with its members (role changes version-checked),
domains and user groups (members removed, roles taken back version-checked, groups deleted),
Slurm's words explained, both languages; other domains' groups untouched."""

from __future__ import annotations

import re

from sqlalchemy import select

from portal.extensions import db
from portal.tenancy.models import Group, GroupGrant, GroupMember, Membership
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

ZH = {"Accept-Language": "zh-CN"}


def grant_role(env: Env, group: int, project: int) -> int | None:
    with env.app.app_context():
        return db.session.scalar(
            select(GroupGrant.role_id).where(
                GroupGrant.group_id == group, GroupGrant.project_id == project
            )
        )


def test_tenancy_pages_explain_slurms_words_in_both_languages(env: Env) -> None:
    alice = login(env, "alice")
    nlp = env.world.projects["nlp"]
    page = alice.get(f"/projects/{nlp}").get_data(as_text=True)
    assert "Slurm account" in page
    assert "High priority: may preempt normal and low jobs (QOS high)" in page
    zh = alice.get(f"/projects/{nlp}", headers=ZH).get_data(as_text=True)
    assert "Slurm 账户" in zh
    assert "中优先级：可抢占低优先级作业（QOS normal）" in zh
    assert "默认" in zh
    listing = alice.get("/projects", headers=ZH).get_data(as_text=True)
    assert "优先级（QOS）" in listing
    domains = login(env, "erin").get("/domains", headers=ZH).get_data(as_text=True)
    assert "每个域是集群 root 账户下的一个账户" in domains
    assert "新建项目" in domains


def _role_form_version(page: str, user_id: int) -> str:
    m = re.search(
        rf'action="[^"]*/members/{user_id}/role".*?name="version" value="([0-9a-f]+)"', page, re.S
    )
    assert m
    return m.group(1)


def test_a_members_role_changes_on_the_project_page_unless_it_changed_since(env: Env) -> None:
    cs101, dave = env.world.projects["cs101"], env.world.users["dave"]
    viewer, manager = env.world.roles["viewer"], env.world.roles["manager"]
    tina, carol = login(env, "tina"), login(env, "carol")
    page_t = tina.get(f"/projects/{cs101}").get_data(as_text=True)
    page_c = carol.get(f"/projects/{cs101}").get_data(as_text=True)
    r = tina.post(
        f"/projects/{cs101}/members/{dave}/role",
        data={
            "csrf_token": csrf_of(page_t),
            "version": _role_form_version(page_t, dave),
            "role_id": viewer,
        },
        follow_redirects=True,
    )
    assert "The role of dave is changed." in r.get_data(as_text=True)
    r = carol.post(
        f"/projects/{cs101}/members/{dave}/role",
        data={
            "csrf_token": csrf_of(page_c),
            "version": _role_form_version(page_c, dave),
            "role_id": manager,
        },
        follow_redirects=True,
    )
    assert "Someone else changed the membership of dave" in r.get_data(as_text=True)
    with env.app.app_context():
        held = db.session.scalar(
            select(Membership.role_id).where(
                Membership.project_id == cs101, Membership.user_id == dave
            )
        )
    assert held == viewer
    # a plain member has no role form and cannot change one
    dave_client = login(env, "dave")
    dave_page = dave_client.get(f"/projects/{cs101}").get_data(as_text=True)
    assert "/role" not in dave_page
    r = dave_client.post(
        f"/projects/{cs101}/members/{dave}/role",
        data={"csrf_token": csrf_of(dave_page), "role_id": manager},
    )
    assert r.status_code == 403


def test_group_members_and_grants_are_managed_on_the_groups_page(env: Env) -> None:
    group, nlp = env.world.groups["nlp-readers"], env.world.projects["nlp"]
    gina = env.world.users["gina"]
    erin = login(env, "erin")
    page = erin.get("/groups", headers=ZH).get_data(as_text=True)
    assert "项目上的角色" in page
    assert "只读成员" in page  # the grant's built-in role, in words
    version = re.search(
        rf'action="/groups/{group}/grants/{nlp}/revoke".*?name="version" value="([0-9a-f]+)"',
        page,
        re.S,
    )
    assert version
    # another admin gives the group another role first: erin's take-back is refused
    r = env.api("admin").put(
        f"/api/v1/groups/{group}/grants",
        json={"project_id": nlp, "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 200
    r = erin.post(
        f"/groups/{group}/grants/{nlp}/revoke",
        data={"csrf_token": csrf_of(page), "version": version.group(1)},
        follow_redirects=True,
    )
    assert "Someone else changed this role of the group" in r.get_data(as_text=True)
    assert grant_role(env, group, nlp) == env.world.roles["member"]
    fresh = erin.get("/groups").get_data(as_text=True)
    version = re.search(
        rf'action="/groups/{group}/grants/{nlp}/revoke".*?name="version" value="([0-9a-f]+)"',
        fresh,
        re.S,
    )
    assert version
    r = erin.post(
        f"/groups/{group}/grants/{nlp}/revoke",
        data={"csrf_token": csrf_of(fresh), "version": version.group(1)},
        follow_redirects=True,
    )
    assert "taken back" in r.get_data(as_text=True)
    assert grant_role(env, group, nlp) is None
    r = erin.post(f"/groups/{group}/members/{gina}/remove", data={"csrf_token": csrf_of(fresh)})
    assert r.status_code == 302
    with env.app.app_context():
        assert db.session.scalar(select(GroupMember.id).where(GroupMember.user_id == gina)) is None
    r = erin.post(f"/groups/{group}/delete", data={"csrf_token": csrf_of(fresh)})
    assert r.status_code == 302
    with env.app.app_context():
        assert db.session.get(Group, group) is None


def test_another_domains_admin_cannot_touch_a_group(env: Env) -> None:
    group, nlp = env.world.groups["nlp-readers"], env.world.projects["nlp"]
    gina = env.world.users["gina"]
    tina = login(env, "tina")
    page = tina.get("/groups").get_data(as_text=True)
    assert "nlp-readers" not in page
    token = csrf_of(page)
    for path in (
        f"/groups/{group}/delete",
        f"/groups/{group}/members/{gina}/remove",
        f"/groups/{group}/grants/{nlp}/revoke",
    ):
        r = tina.post(path, data={"csrf_token": token}, follow_redirects=True)
        assert "No such user group." in r.get_data(as_text=True), path
    with env.app.app_context():
        assert db.session.get(Group, group) is not None
        assert db.session.scalar(select(GroupMember.id).where(GroupMember.user_id == gina))
    assert grant_role(env, group, nlp) == env.world.roles["viewer"]
