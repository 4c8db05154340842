"""The admission hook's policy table rendered from the portal: a tenant made in the portal
reaches the table, and the real hook (lua5.1) then admits its members' jobs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from portal.quotas.policy import portal_policy
from slurm_plugins.admission.config import LAB_POLICY, PriorityClass, load_policy
from slurm_plugins.admission.render import HOOK_FILE, TABLE_FILE
from tests.unit.admission.luarun import run_one, submit
from tests.unit.portal.conftest import Env


def _dir(env: Env) -> Path:
    return Path(env.app.config["ADMISSION_DIR"])


def _new_tenant(env: Env) -> int:
    """erin (research's admin) makes project speech, with nobody as a member."""
    r = env.api("erin").post(
        "/api/v1/projects",
        json={"domain_id": env.world.domains["research"], "name": "speech", "qos": "normal,low"},
    )
    assert r.status_code == 201, r.json
    project = r.json["id"]
    r = env.api("erin").post(
        f"/api/v1/projects/{project}/members",
        json={"username": "nobody", "role_id": env.world.roles["member"]},
    )
    assert r.status_code == 201, r.json
    return int(project)


def test_a_tenant_made_in_the_portal_reaches_the_hook(env: Env) -> None:
    first = env.api("admin").post("/api/v1/slurm/policy")
    assert first.status_code == 200, first.json
    hook = _dir(env) / HOOK_FILE
    speech_job = submit("speech", "nobody", account="speech", tres_per_node="gres:shard:8")
    refused = run_one(hook, speech_job)
    assert not refused.accepted  # no tenant speech yet: the hook refuses the account
    project = _new_tenant(env)  # erin's new member is applied at once: no admin's install
    assert run_one(hook, speech_job).accepted, refused
    assert '["speech"]' in (_dir(env) / TABLE_FILE).read_text()
    preview = env.api("admin").get("/api/v1/slurm/policy").json
    assert "speech" in preview["tenants"]
    assert "nobody" in preview["users"]
    assert preview["stale"] == []  # installed already
    assert preview["digest"] != first.json["digest"]
    # the project's quota bounds a job's devices in the table, installed by erin's save
    env.api("erin").put(f"/api/v1/projects/{project}/quota", json={"shards": 16})
    over = run_one(hook, submit("big", "nobody", account="speech", tres_per_node="gres:gpu:1"))
    assert not over.accepted
    assert run_one(
        hook, submit("half", "nobody", account="speech", tres_per_node="gres:shard:16")
    ).accepted
    audit = env.api("admin").get("/api/v1/audit?action=slurm.policy").json
    assert len(audit) == 3
    assert audit[0]["after"]["changed"] == [TABLE_FILE]
    assert audit[0]["actor"] == "erin"  # the domain admin alone


def test_the_portal_replaces_the_files_tenants_and_keeps_its_cluster(env: Env) -> None:
    base = load_policy(LAB_POLICY)
    with env.app.app_context():
        from portal.web import session

        cfg = portal_policy(session(), base)
    assert cfg.pools == base.pools
    assert cfg.cluster == base.cluster
    tenants = {t.name: t for t in cfg.tenants}
    assert set(tenants) == {"cs101", "nlp", "vision"}
    assert tenants["cs101"].shard_sizes == base.tenant("cs101").shard_sizes  # from the file
    assert tenants["cs101"].domain == "teaching"
    # nlp's QOS list in the portal opens the high class to the whole project
    assert tenants["nlp"].classes == (PriorityClass.MEDIUM, PriorityClass.LOW, PriorityClass.HIGH)
    users = {u.name: u for u in cfg.users}
    assert users["root"].unrestricted
    assert users["alice"].tenant == "nlp"
    assert users["sam"].tenant == "nlp"  # a portal user the file does not know
    assert "gina" not in users  # a viewer may not submit: not a user of the hook


def test_only_platform_admins_and_only_with_a_directory(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env.api("erin").post("/api/v1/slurm/policy").status_code == 403
    assert not (_dir(env) / TABLE_FILE).exists()
    monkeypatch.setitem(env.app.config, "ADMISSION_DIR", None)
    r = env.api("admin").get("/api/v1/slurm/policy")
    assert r.status_code == 409
    assert "ADMISSION_DIR" in r.json["message"]


def test_an_invalid_result_is_refused_whole(env: Env, tmp_path: Path) -> None:
    """A project name the policy cannot take is named, and nothing is written."""
    bad = tmp_path / "policy.yaml"
    bad.write_text(LAB_POLICY.read_text().replace("default_partition: gpu", "default_partition: x"))
    env.app.config["ADMISSION_POLICY"] = str(bad)
    try:
        r = env.api("admin").post("/api/v1/slurm/policy")
    finally:
        env.app.config["ADMISSION_POLICY"] = None
    assert r.status_code == 409
    assert "default_partition" in r.json["message"]
    assert not (_dir(env) / TABLE_FILE).exists()


def test_the_command_line_installs_as_the_operator(env: Env) -> None:
    _new_tenant(env)
    for installed in _dir(env).iterdir():  # by the member's add: the operator starts afresh
        installed.unlink()
    runner = env.app.test_cli_runner()
    dry: Result = runner.invoke(args=["render-policy", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would write" in dry.output
    assert not (_dir(env) / TABLE_FILE).exists()
    done = runner.invoke(args=["render-policy"])
    assert done.exit_code == 0, done.output
    assert '["speech"]' in (_dir(env) / TABLE_FILE).read_text()
    assert runner.invoke(args=["render-policy"]).output.count("nothing (up to date)") == 1


def test_the_quotas_page_previews_and_installs(env: Env) -> None:
    from tests.unit.portal.test_pages import login

    client = login(env, "admin")
    page = client.get("/quotas?policy=1").get_data(as_text=True)
    assert 'id="policy-state"' in page
    assert "aipool_policy.lua" in page
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    r = client.post("/quotas/policy", data={"csrf_token": token}, follow_redirects=True)
    assert "Admission policy" in r.get_data(as_text=True)
    assert (_dir(env) / TABLE_FILE).exists()
