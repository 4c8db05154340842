"""Pages: login with CSRF, every page renders for a member, forms write through the services."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

from tests.unit.portal.conftest import Env
from tests.unit.portal.world import PASSWORD

CSRF = re.compile(
    r'name="csrf_token" type="hidden" value="([^"]+)"|name="csrf_token" value="([^"]+)"'
)


def csrf_of(html: str) -> str:
    m = CSRF.search(html)
    assert m, "no CSRF token on the page"
    return m.group(1) or m.group(2)


def login(env: Env, username: str) -> FlaskClient:
    client = env.app.test_client()
    token = csrf_of(client.get("/login").get_data(as_text=True))
    r = client.post(
        "/login", data={"username": username, "password": PASSWORD, "csrf_token": token}
    )
    assert r.status_code == 302, r.get_data(as_text=True)
    return client


def test_login_needs_csrf_and_the_right_password(env: Env) -> None:
    client = env.app.test_client()
    r = client.post("/login", data={"username": "alice", "password": PASSWORD})
    assert r.status_code == 400  # no CSRF token
    token = csrf_of(client.get("/login").get_data(as_text=True))
    r = client.post("/login", data={"username": "alice", "password": "nope", "csrf_token": token})
    assert r.status_code == 401
    assert client.get("/").status_code == 302


def test_pages_render_for_a_member(env: Env) -> None:
    client = login(env, "alice")
    env.slurm.add_job("alice", "nlp")
    for path in (
        "/",
        "/projects",
        f"/projects/{env.world.projects['nlp']}",
        "/quotas",
        "/jobs",
        "/jobs/new",
        "/nodes",
        "/account/password",
    ):
        r = client.get(path)
        assert r.status_code == 200, (path, r.status_code)
    assert client.get(f"/projects/{env.world.projects['vision']}").status_code == 404
    assert client.get("/audit").status_code == 403


def test_submit_form_runs_as_the_user(env: Env) -> None:
    client = login(env, "alice")
    page = client.get("/jobs/new").get_data(as_text=True)
    r = client.post(
        "/jobs/new",
        data={
            "csrf_token": csrf_of(page),
            "project_id": env.world.projects["nlp"],
            "name": "t1",
            "shards": 8,
            "time_limit": 5,
            "script": "#!/bin/bash\r\necho hi\r\n",
        },
    )
    assert r.status_code == 302, r.get_data(as_text=True)
    user, script, props = env.slurm.submitted[-1]
    assert (user, props["account"], props["gres"]) == ("alice", "nlp", "shard:8")
    assert script == "#!/bin/bash\necho hi\n"
    job_id = int(r.headers["Location"].rsplit("/", 1)[1])
    detail = client.get(f"/jobs/{job_id}").get_data(as_text=True)
    assert "PENDING" in detail
    r = client.post(f"/jobs/{job_id}/cancel", data={"csrf_token": csrf_of(detail)})
    assert r.status_code == 302
    assert env.slurm.cancelled[-1] == ("alice", job_id)


def test_a_jupyter_forms_refusals_stand_at_its_fields_in_the_readers_language(env: Env) -> None:
    client = login(env, "alice")

    def refused(lang: str, name: str) -> str:
        """The Jupyter form posted in ``lang`` with a card share and a card type: its page."""
        headers = {"Accept-Language": lang}
        page = client.get("/jobs/new", headers=headers).get_data(as_text=True)
        data = {
            "csrf_token": csrf_of(page),
            "kind": "jupyter",
            "project_id": env.world.projects["nlp"],
            "name": name,
            "shards": 8,
            "gres_type": "a100",
            "time_limit": 30,
        }
        r = client.post("/jobs/new", headers=headers, data=data)
        assert r.status_code == 422
        return r.get_data(as_text=True)

    def at(html: str, field: str) -> str:
        """What the form shows at ``field``."""
        rest = html[html.index(f'id="{field}"') :]
        return rest[: rest.index("</div>")]

    # a name the rule refuses is said at the name, before anything else is checked
    html = refused("zh-CN", "my notebook")
    assert "以字母或数字开头，其后为任意文字的字母、数字" in at(html, "name")  # a space is none
    # the form's own advice: it has no affinity.features to point to
    html = refused("zh-CN", "笔记本")
    assert "卡的份额不能指定卡型号；请留空设备型号，或申请整卡 GPU" in at(html, "gres_type")
    assert "affinity" not in html
    assert "resources.gpu_type" not in html  # no spec paths shown
    assert "spec:" not in html
    # the same form in English: the advice as a sentence, like the form's other messages
    assert (
        "A share of a card cannot choose the card type; leave the device type empty, or ask "
        "for whole GPUs" in at(refused("en-US", "notebook"), "gres_type")
    )
    assert env.slurm.submitted == []


def test_quota_and_sync_pages_for_the_admin(env: Env) -> None:
    client = login(env, "admin")
    page = client.get("/quotas?preview=1").get_data(as_text=True)
    assert "Apply to Slurm" in page
    r = client.post(
        f"/quotas/domains/{env.world.domains['research']}",
        data={"csrf_token": csrf_of(page), "gpus": "8", "shards": "", "npus": "", "cpus": ""},
    )
    assert r.status_code == 302
    assert "GPU cards</span>: — → 8" in client.get("/audit").get_data(as_text=True)


def test_manager_adds_and_removes_members_on_the_project_page(env: Env) -> None:
    client = login(env, "carol")
    cs101 = env.world.projects["cs101"]
    page = client.get(f"/projects/{cs101}").get_data(as_text=True)
    assert "Add a member" in page
    r = client.post(
        f"/projects/{cs101}",
        data={
            "csrf_token": csrf_of(page),
            "username": "ghost",
            "role_id": env.world.roles["member"],
        },
    )
    assert r.status_code == 404
    assert "No user" in r.get_data(as_text=True)
    r = client.post(
        f"/projects/{cs101}",
        data={
            "csrf_token": csrf_of(page),
            "username": "nobody",
            "role_id": env.world.roles["member"],
        },
    )
    assert r.status_code == 302
    page = client.get(f"/projects/{cs101}").get_data(as_text=True)
    assert "nobody" in page
    nobody = env.world.users["nobody"]
    r = client.post(
        f"/projects/{cs101}/members/{nobody}/remove", data={"csrf_token": csrf_of(page)}
    )
    assert r.status_code == 302
    assert "nobody" not in client.get(f"/projects/{cs101}").get_data(as_text=True)
    # a plain member sees the members but no form, and cannot remove anyone
    dave = login(env, "dave")
    page = dave.get(f"/projects/{cs101}").get_data(as_text=True)
    assert "Add a member" not in page
    r = dave.post(
        f"/projects/{cs101}/members/{env.world.users['carol']}/remove",
        data={"csrf_token": csrf_of(page)},
    )
    assert r.status_code == 403


def test_page_writes_need_the_csrf_token(env: Env) -> None:
    client = login(env, "carol")
    cs101, dave = env.world.projects["cs101"], env.world.users["dave"]
    r = client.post(f"/projects/{cs101}/members/{dave}/remove")
    assert r.status_code == 400
    assert "dave" in client.get(f"/projects/{cs101}").get_data(as_text=True)


def test_domain_admin_reads_the_audit_page_of_their_domain(env: Env) -> None:
    env.api("erin").patch(
        f"/api/v1/projects/{env.world.projects['nlp']}", json={"description": "changed"}
    )
    env.api("tina").patch(
        f"/api/v1/projects/{env.world.projects['cs101']}", json={"description": "changed too"}
    )
    page = login(env, "erin").get("/audit?action_prefix=project").get_data(as_text=True)
    assert "project.update" in page
    assert "changed too" not in page
    assert "changed" in page


def test_domain_admin_pages_create_projects_groups_and_grants(env: Env) -> None:
    client = login(env, "erin")
    page = client.get("/domains").get_data(as_text=True)
    assert "research" in page
    assert "teaching" not in page
    assert "New domain" not in page  # platform admins only
    research = env.world.domains["research"]
    r = client.post(
        f"/domains/{research}/projects",
        data={"csrf_token": csrf_of(page), "name": "speech", "description": "Speech", "qos": ""},
    )
    assert r.status_code == 302
    assert "speech" in client.get("/domains").get_data(as_text=True)
    r = client.post(
        f"/domains/{env.world.domains['teaching']}/projects",
        data={"csrf_token": csrf_of(page), "name": "sneaky"},
    )
    assert "No such domain." in client.get("/domains").get_data(as_text=True)
    page = client.get("/groups").get_data(as_text=True)
    assert "nlp-readers" in page
    r = client.post(
        "/groups/new",
        data={"csrf_token": csrf_of(page), "domain_id": research, "name": "asr", "description": ""},
    )
    assert r.status_code == 302
    api = env.api("admin")
    group = next(g for g in api.get("/api/v1/groups").json if g["name"] == "asr")
    client.post(
        f"/groups/{group['id']}/members", data={"csrf_token": csrf_of(page), "username": "nobody"}
    )
    client.post(
        f"/groups/{group['id']}/grants",
        data={
            "csrf_token": csrf_of(page),
            "project_id": env.world.projects["vision"],
            "role_id": env.world.roles["member"],
        },
    )
    names = {p["name"] for p in env.api("nobody").get("/api/v1/projects").json}
    assert names == {"vision"}
    assert "sneaky" not in {p["name"] for p in api.get("/api/v1/projects?page_size=50").json}


def test_plain_members_see_no_admin_pages_of_others(env: Env) -> None:
    client = login(env, "bob")
    assert "Groups" not in client.get("/").get_data(as_text=True)
    assert "nlp-readers" not in client.get("/groups").get_data(as_text=True)
    page = client.get("/domains").get_data(as_text=True)
    assert "New project" not in page
