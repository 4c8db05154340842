"""Quotas: hierarchy rules, the pure renderer, and the Slurm sync preview/apply."""

from __future__ import annotations

from portal.quotas.render import AccountRow, SubmitterRow, render
from slurm_plugins.client.specs import AccountSpec, UserSpec
from tests.unit.portal.conftest import Env


def test_render_orders_parents_first_and_maps_limits() -> None:
    plan = render(
        [
            AccountRow("nlp", "research", "NLP", {"gres/gpu": 4}),
            AccountRow("research", "root", "Research", {"gres/gpu": 8, "cpu": 64}),
        ],
        [
            SubmitterRow("alice", "nlp", ("normal", "low", "high")),
            SubmitterRow("alice", "nlp", ("normal", "low", "high")),  # direct and via a group
        ],
    )
    assert plan.accounts == (
        AccountSpec("research", "root", "Research", {"cpu": 64, "gres/gpu": 8}),
        AccountSpec("nlp", "research", "NLP", {"gres/gpu": 4}),
    )
    assert plan.users == (UserSpec("alice", "nlp", ("high", "low", "normal"), "normal"),)


def test_project_quota_stays_within_the_domain(env: Env) -> None:
    admin, erin = env.api("admin"), env.api("erin")
    research, nlp = env.world.domains["research"], env.world.projects["nlp"]
    assert admin.put(f"/api/v1/domains/{research}/quota", json={"gpus": 8}).status_code == 200
    r = erin.put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 9})
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    r = erin.put(f"/api/v1/projects/{nlp}/quota", json={"gpus": None})
    assert r.status_code == 409  # unlimited inside a limited domain
    r = erin.put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 4, "shards": 64})
    limits = {k: r.json[k] for k in ("gpus", "shards", "npus", "cpus")}
    assert limits == {"gpus": 4, "shards": 64, "npus": None, "cpus": None}
    assert r.json["slurm"]["applied"] is True  # enforced at once, by the domain admin alone
    # the domain cannot drop below what a project holds
    r = admin.put(f"/api/v1/domains/{research}/quota", json={"gpus": 2})
    assert r.status_code == 409
    assert "nlp has 4 GPU cards" in r.json["message"]
    assert env.api("alice").get(f"/api/v1/projects/{nlp}/quota").json["gpus"] == 4


def test_bad_quota_values_are_field_errors(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    r = env.api("erin").put(f"/api/v1/projects/{nlp}/quota", json={"gpus": -1, "npus": "2"})
    assert r.status_code == 422
    assert set(r.json["errors"]["json"]) == {"gpus", "npus"}
    assert env.api("erin").get(f"/api/v1/projects/{nlp}/quota").json["gpus"] is None


def test_a_tenant_admins_quota_reaches_slurm_when_saved(env: Env) -> None:
    """No platform admin in the loop: the domain admin's save sends the tenant's commands
    (only its own accounts), audited; a dry run shows them and saves nothing."""
    erin, nlp = env.api("erin"), env.world.projects["nlp"]
    r = erin.put(f"/api/v1/projects/{nlp}/quota?dry_run=true", json={"gpus": 3})
    assert r.status_code == 200, r.json
    assert r.json["gpus"] == 3
    assert r.json["slurm"]["applied"] is False
    assert any("name=nlp" in c and "gres/gpu=3" in c for c in r.json["slurm"]["commands"])
    assert env.slurm.applied == []
    assert erin.get(f"/api/v1/projects/{nlp}/quota").json["gpus"] is None  # nothing saved
    r = erin.put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 3})
    (sent,) = env.slurm.applied
    assert sent == r.json["slurm"]["commands"]
    assert any("name=nlp" in c and "gres/gpu=3" in c for c in sent)
    assert not any("cs101" in c or "teaching" in c for c in sent)  # another domain's
    events = env.api("admin").get("/api/v1/audit?action=slurm.sync").json
    assert events[0]["after"]["commands"] == sent
    assert erin.get(f"/api/v1/projects/{nlp}/quota").json["gpus"] == 3


def test_sync_preview_and_apply(env: Env) -> None:
    admin = env.api("admin")
    nlp = env.world.projects["nlp"]
    admin.put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 2, "shards": 32})
    env.slurm.applied.clear()  # the save applied the tenant's part; the stand-in keeps none
    preview = admin.get("/api/v1/slurm/sync").json
    assert preview["applied"] is False
    assert preview["accounts"][:2] == ["research", "teaching"]
    assert "alice@nlp" in preview["users"]
    assert "sam@nlp" in preview["users"]  # the custom role may submit
    assert "gina@nlp" not in preview["users"]  # viewers get no association
    assert "victor@vision" not in preview["users"]
    assert any(
        c.startswith("modify account where name=nlp") and "GrpTRES=gres/gpu=2,gres/shard=32" in c
        for c in preview["commands"]
    ), preview["commands"]
    assert env.slurm.applied == []
    applied = admin.post("/api/v1/slurm/sync").json
    assert applied["applied"] is True
    assert env.slurm.applied == [applied["commands"]]
    events = admin.get("/api/v1/audit?action=slurm.sync").json
    assert events[0]["after"]["commands"] == applied["commands"]


def test_free_text_reaches_slurm_without_quotes_or_control_characters(env: Env) -> None:
    admin = env.api("admin")
    said = 'Alice\'s "speech" group\x8a (2026)'  # the portal itself refuses C0 controls
    r = admin.post(
        "/api/v1/projects",
        json={"domain_id": env.world.domains["research"], "name": "speech", "description": said},
    )
    assert r.status_code == 201, r.json
    assert admin.get(f"/api/v1/projects/{r.json['id']}").json["description"] == said  # as written
    preview = admin.get("/api/v1/slurm/sync")
    assert preview.status_code == 200, preview.json
    mine = [c for c in preview.json["commands"] if c.startswith("add account speech")]
    assert len(mine) == 1, preview.json["commands"]
    assert 'Description="Alice s speech group (2026)"' in mine[0], mine
