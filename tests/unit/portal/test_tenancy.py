"""Tenancy: lists show only the caller's tenants, writes validate per field and leave nothing
half-created, groups grant roles, and every write lands in the audit log."""

from __future__ import annotations

import json

import pytest

from tests.unit.portal.conftest import Env

VISIBLE_PROJECTS = {
    "admin": {"cs101", "nlp", "vision"},
    "erin": {"nlp", "vision"},
    "tina": {"cs101"},
    "carol": {"cs101"},
    "dave": {"cs101"},
    "alice": {"nlp"},
    "bob": {"vision"},
    "sam": {"nlp"},
    "victor": {"vision"},
    "gina": {"nlp"},
    "nobody": set(),
}
VISIBLE_DOMAINS = {
    "admin": {"research", "teaching"},
    "erin": {"research"},
    "tina": {"teaching"},
    "carol": {"teaching"},
    "alice": {"research"},
    "gina": {"research"},
    "nobody": set(),
}


@pytest.mark.parametrize("user", sorted(VISIBLE_PROJECTS))
def test_project_list_shows_own_tenants_only(env: Env, user: str) -> None:
    r = env.api(user).get("/api/v1/projects")
    assert r.status_code == 200
    assert {p["name"] for p in r.json} == VISIBLE_PROJECTS[user]


@pytest.mark.parametrize("user", sorted(VISIBLE_DOMAINS))
def test_domain_list_shows_own_tenants_only(env: Env, user: str) -> None:
    assert {d["name"] for d in env.api(user).get("/api/v1/domains").json} == VISIBLE_DOMAINS[user]


def test_user_list_shows_co_members_only(env: Env) -> None:
    def names(who: str) -> set[str]:
        return {u["username"] for u in env.api(who).get("/api/v1/users?page_size=100").json}

    assert names("alice") == {"alice", "sam", "gina"}  # nlp: members and group members
    assert names("carol") == {"carol", "dave"}
    assert names("nobody") == {"nobody"}
    assert names("victor") == {"victor"}  # viewers do not read members
    assert {"alice", "bob", "gina", "erin", "sam", "victor"} <= names("erin")
    assert "carol" not in names("erin")
    assert len(names("admin")) == len(env.world.users)


def test_group_list_is_for_domain_admins(env: Env) -> None:
    assert [g["name"] for g in env.api("erin").get("/api/v1/groups").json] == ["nlp-readers"]
    assert env.api("tina").get("/api/v1/groups").json == []
    assert env.api("gina").get("/api/v1/groups").json == []


def test_lists_are_paginated(env: Env) -> None:
    r = env.api("admin").get("/api/v1/users?page=2&page_size=3")
    assert r.status_code == 200
    assert len(r.json) == 3
    pagination = json.loads(r.headers["X-Pagination"])
    assert pagination["total"] == len(env.world.users)
    assert pagination["page"] == 2


def test_bad_project_input_gives_field_errors_and_creates_nothing(env: Env) -> None:
    api = env.api("erin")
    research = env.world.domains["research"]
    before = api.get("/api/v1/projects").json
    for body, field in [
        ({"domain_id": research}, "name"),
        ({"domain_id": research, "name": "Bad Name!"}, "name"),
        ({"domain_id": research, "name": "root"}, "name"),
        ({"domain_id": research, "name": "okname", "qos": "normal;drop"}, "qos"),
        ({"domain_id": research, "name": "okname", "description": "a\nb"}, "description"),
        ({"domain_id": research, "name": "okname", "extra": 1}, "extra"),
        ({"domain_id": "x", "name": "okname"}, "domain_id"),
    ]:
        r = api.post("/api/v1/projects", json=body)
        assert r.status_code == 422, (body, r.json)
        assert field in r.json["errors"]["json"], (body, r.json)
    assert api.get("/api/v1/projects").json == before
    assert env.api("admin").get("/api/v1/audit?action=project.create").json == []


def test_account_names_are_one_namespace(env: Env) -> None:
    api = env.api("admin")
    research = env.world.domains["research"]
    assert (
        api.post("/api/v1/projects", json={"domain_id": research, "name": "teaching"}).status_code
        == 409
    )
    assert api.post("/api/v1/domains", json={"name": "nlp"}).status_code == 409


def test_group_grant_gives_the_role_to_its_members(env: Env) -> None:
    erin, group = env.api("erin"), env.world.groups["nlp-readers"]
    vision = env.world.projects["vision"]
    assert env.api("gina").get(f"/api/v1/projects/{vision}").status_code == 404
    r = erin.put(
        f"/api/v1/groups/{group}/grants",
        json={"project_id": vision, "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 200
    assert env.api("gina").get(f"/api/v1/projects/{vision}").status_code == 200
    # a group of one domain cannot be given another domain's project
    r = erin.put(
        f"/api/v1/groups/{group}/grants",
        json={"project_id": env.world.projects["cs101"], "role_id": 1},
    )
    assert r.status_code == 422
    assert "project_id" in r.json["errors"]["json"]
    assert (
        erin.delete(f"/api/v1/groups/{group}/members/{env.world.users['gina']}").status_code == 204
    )
    assert env.api("gina").get(f"/api/v1/projects/{vision}").status_code == 404


def test_custom_roles_are_sets_of_grantable_permissions(env: Env) -> None:
    api = env.api("admin")
    r = api.post("/api/v1/roles", json={"name": "auditor", "permissions": ["quota.manage"]})
    assert r.status_code == 422  # not grantable through a project role
    r = api.post(
        "/api/v1/roles", json={"name": "auditor", "permissions": ["project.read", "jobs.read_all"]}
    )
    assert r.status_code == 201
    role = r.json["id"]
    cs101 = env.world.projects["cs101"]
    r = env.api("carol").post(
        f"/api/v1/projects/{cs101}/members", json={"username": "nobody", "role_id": role}
    )
    assert r.status_code == 201
    assert env.api("nobody").get(f"/api/v1/projects/{cs101}").status_code == 200
    assert env.api("nobody").get(f"/api/v1/projects/{cs101}/members").status_code == 403
    member = env.world.roles["member"]
    assert api.patch(f"/api/v1/roles/{member}", json={"description": "x"}).status_code == 409
    assert api.delete(f"/api/v1/roles/{role}").status_code == 409  # still held


def test_every_write_is_audited_with_before_and_after(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    env.api("erin").patch(f"/api/v1/projects/{nlp}", json={"description": "new text"})
    events = env.api("admin").get("/api/v1/audit?action=project.update").json
    assert len(events) == 1
    e = events[0]
    assert e["actor"] == "erin"
    assert e["before"]["description"] == "NLP group"
    assert e["after"]["description"] == "new text"
    # domain admins read their own domain's events only
    assert [x["action"] for x in env.api("erin").get("/api/v1/audit").json] == ["project.update"]
    assert env.api("tina").get("/api/v1/audit").json == []
    r = env.api("admin").get(
        "/api/v1/audit?actor=erin&target_type=project&since=2000-01-01T00:00:00"
    )
    assert len(r.json) == 1
    assert env.api("admin").get("/api/v1/audit?actor=erin&until=2000-01-01T00:00:00").json == []


def test_members_are_added_once(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    r = env.api("erin").post(
        f"/api/v1/projects/{nlp}/members",
        json={"username": "alice", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 409
    r = env.api("erin").post(
        f"/api/v1/projects/{nlp}/members",
        json={"username": "ghost", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 404


def test_openapi_is_served(env: Env) -> None:
    r = env.app.test_client().get("/api/v1/openapi.json")
    assert r.status_code == 200
    paths = r.json["paths"]
    assert "/api/v1/projects/{project_id}/members" in paths
    assert "/api/v1/slurm/sync" in paths
    assert "bearer" in r.json["components"]["securitySchemes"]
