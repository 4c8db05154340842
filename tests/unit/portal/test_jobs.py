"""Jobs: submitted as the caller with the project's account, validated, quota-checked,
listed per permission, cancelled as the owner or by a manager."""

from __future__ import annotations

from typing import Any

import pytest

from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env


def body(env: Env, project: str = "nlp", **extra: Any) -> dict[str, Any]:
    return {
        "project_id": env.world.projects[project],
        "name": "train",
        "time_limit": 30,
        "script": "#!/bin/bash\npython train.py\n",
        **extra,
    }


def test_submit_runs_as_the_caller_on_the_project_account(env: Env) -> None:
    r = env.api("alice").post(
        "/api/v1/jobs",
        json=body(
            env, gpus=2, gres_type="a100", cpus=8, qos="high", partition="gpu", memory_mb=4096
        ),
    )
    assert r.status_code == 201, r.json
    user, script, props = env.slurm.submitted[-1]
    assert user == "alice"
    assert script == "#!/bin/bash\npython train.py\n"
    assert props["account"] == "nlp"
    assert props["gres"] == "gpu:a100:2"
    assert props["qos"] == "high"
    assert props["cpus_per_task"] == 8
    assert props["memory_per_node"] == 4096
    assert props["current_working_directory"] == str(env.app.config["JOB_WORKDIR"])
    job = env.api("alice").get(f"/api/v1/jobs/{r.json['job_id']}").json
    assert (job["user"], job["state"], job["project_id"]) == (
        "alice",
        "PENDING",
        env.world.projects["nlp"],
    )
    audit = env.api("admin").get("/api/v1/audit?action=job.submit").json
    assert audit[0]["actor"] == "alice"
    assert audit[0]["target_id"] == str(r.json["job_id"])


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"gpus": 1, "shards": 4}, "gpus"),
        ({"script": "echo no shebang"}, "script"),
        ({"script": "#!/bin/bash\n\x00"}, "script"),
        ({"qos": "high", "project": "vision"}, "qos"),
        ({"name": "bad name;"}, "name"),
        ({"time_limit": 0}, "time_limit"),
        ({"gpus": "2"}, "gpus"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_submissions_are_field_errors(env: Env, extra: dict[str, Any], field: str) -> None:
    project = extra.pop("project", "nlp")
    who = "bob" if project == "vision" else "alice"
    r = env.api(who).post("/api/v1/jobs", json=body(env, project, **extra))
    assert r.status_code == 422, r.json
    assert field in r.json["errors"]["json"]
    assert env.slurm.submitted == []


def test_requests_over_the_quota_are_refused_before_slurm(env: Env) -> None:
    env.api("admin").put(f"/api/v1/projects/{env.world.projects['nlp']}/quota", json={"gpus": 2})
    r = env.api("alice").post("/api/v1/jobs", json=body(env, gpus=3))
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    r = env.api("alice").post("/api/v1/jobs", json=body(env, gpus=1, nodes=3))
    assert r.status_code == 409
    assert env.slurm.submitted == []


def test_slurm_refusals_come_back_as_conflicts(env: Env) -> None:
    env.slurm.reject = "Invalid generic resource (gres) specification"
    r = env.api("alice").post("/api/v1/jobs", json=body(env, gpus=1))
    assert r.status_code == 409
    assert "gres" in r.json["message"]
    assert env.api("admin").get("/api/v1/audit?action=job.submit").json == []


def test_queue_is_filtered_per_caller(env: Env) -> None:
    s = env.slurm
    ids = {
        "alice": s.add_job("alice", "nlp"),
        "sam": s.add_job("sam", "nlp"),
        "bob": s.add_job("bob", "vision"),
        "carol": s.add_job("carol", "cs101"),
        "root": s.add_job("root", "root"),
    }
    s.add_job("alice", "nlp", state=JobState.COMPLETED)  # finished: not in the queue

    def seen(who: str, query: str = "") -> set[int]:
        return {j["job_id"] for j in env.api(who).get(f"/api/v1/jobs{query}").json}

    assert seen("alice") == {ids["alice"]}
    assert seen("sam") == {ids["sam"]}
    assert seen("gina") == {ids["alice"], ids["sam"]}  # viewer through the group
    assert seen("erin") == {ids["alice"], ids["sam"], ids["bob"]}
    assert seen("tina") == {ids["carol"]}
    assert seen("nobody") == set()
    assert seen("admin") == set(ids.values())
    assert seen("erin", f"?project_id={env.world.projects['vision']}") == {ids["bob"]}
    assert seen("erin", "?user=sam") == {ids["sam"]}


def test_cancel_as_owner_or_manager(env: Env) -> None:
    s = env.slurm
    mine, daves = s.add_job("alice", "nlp"), s.add_job("dave", "cs101")
    assert env.api("alice").delete(f"/api/v1/jobs/{mine}").status_code == 200
    assert s.cancelled[-1] == ("alice", mine)  # as the user, through slurmrestd
    assert env.api("alice").delete(f"/api/v1/jobs/{mine}").status_code == 409  # not active now
    assert env.api("carol").delete(f"/api/v1/jobs/{daves}").status_code == 200
    assert s.cancelled[-1] == (None, daves)  # by the portal, for the manager
    events = env.api("admin").get("/api/v1/audit?action=job.cancel").json
    assert [e["actor"] for e in events] == ["carol", "alice"]


def test_cluster_totals_and_nodes(env: Env) -> None:
    total = env.api("bob").get("/api/v1/cluster").json
    nodes = env.api("bob").get("/api/v1/nodes?page_size=100").json
    assert total["nodes"] == len(nodes) > 0
    for key in ("gpus", "shards", "npus", "cpus", "memory_mb"):
        assert total[key]["total"] == sum(n[key]["total"] for n in nodes)
        assert total[key]["used"] == sum(n[key]["used"] for n in nodes)
    assert total["cpus"]["total"] > 0
    assert total["gpus"]["total"] > 0


HELLO = {
    "name": "hello",
    "resources": {"gpus": 0.25},
    "command": ["python", "-c", "print('hello')"],
}


def test_spec_jobs_render_through_jobspec_and_run_as_the_caller(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": HELLO})
    assert r.status_code == 201, r.json
    user, script, props = env.slurm.submitted[-1]
    assert user == "alice"
    assert script.startswith("#!/bin/bash")
    assert "set -euo pipefail" in script
    assert props["account"] == "nlp"
    assert props["gres"] == "shard:8"
    assert props["name"] == "hello"
    assert props["comment"].startswith("aipool:")
    assert props["current_working_directory"] == str(env.app.config["JOB_WORKDIR"])


def test_a_precision_chooses_among_the_pools_card_models(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    bf16 = {**HELLO, "resources": {"gpus": 1, "precision": "bf16"}}
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": bf16})
    assert r.status_code == 201, r.json
    assert env.slurm.requests[-1].components[0].constraint == "a100"
    fp8 = {**HELLO, "resources": {"gpus": 1, "precision": "fp8"}}
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": fp8})
    assert r.status_code == 422, r.json
    assert r.json["errors"]["json"]["spec"] == [
        "resources.precision: no GPU model here runs fp8 (models: a100)"
    ]
    zh = {"Accept-Language": "zh-CN"}
    r = env.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": nlp, "spec": fp8}, headers=zh
    )
    assert r.json["errors"]["json"]["spec"] == [
        "resources.precision: 这里没有支持 fp8 的 GPU 型号（现有型号：a100）"
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**HELLO, "resources": {"gpus": 0.3}}, "resources.gpus"),
        ({**HELLO, "project": "vision"}, "charged to nlp"),
        ({**HELLO, "priority": "high", "name": "x"}, None),  # nlp may use high
        ({**HELLO, "affinity": {"exclude": ["gpu1"]}}, None),  # node lists reach slurmrestd
        ({**HELLO, "bogus": 1}, "bogus"),
    ],
)
def test_bad_specs_are_refused_whole(env: Env, spec: dict[str, Any], message: str | None) -> None:
    nlp = env.world.projects["nlp"]
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": spec})
    if message is None:
        assert r.status_code == 201, r.json
        return
    assert r.status_code == 422, r.json
    assert message in " ".join(r.json["errors"]["json"]["spec"])
    assert env.slurm.submitted == []


PS_WORKER = {
    "name": "tf-ps",
    "command": ["python3", "train.py"],
    "resources": {"time": 30},
    "topology": {
        "kind": "ps_worker",
        "roles": {
            "ps": {"resources": {"cpus": 2}},
            "worker": {"replicas": 2, "resources": {"gpus": 1, "gpu_type": "a100"}},
        },
    },
}


def test_a_heterogeneous_spec_is_one_job_of_several_components(env: Env) -> None:
    nlp = env.world.projects["nlp"]
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": PS_WORKER})
    assert r.status_code == 201, r.json
    request = env.slurm.requests[-1]
    ps, workers = request.components
    assert (ps.partition, ps.nodes, workers.partition, workers.nodes) == ("cpu", 1, "gpu", 2)
    assert [c.account for c in request.components] == ["nlp", "nlp"]
    assert request.gres_totals() == {"gpu": 2}
    assert request.workdir == str(env.app.config["JOB_WORKDIR"])
    assert dict(request.environment or {}) == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "SLURM_UMASK": "0027",  # its output: the user's and the portal's group's only
        "AIPOOL_LANG": "en",  # the reader's: the admission hook refuses in it
    }
    assert request.labels["topology"] == "ps_worker"
    audit = env.api("admin").get("/api/v1/audit?action=job.submit").json
    shown = audit[0]["after"]["jobs"]
    assert [p["partition"] for p in shown] == ["cpu", "gpu"]
    assert all("environment" not in p for p in shown)
    # the project's quota counts the cards of every component on every node
    env.api("admin").put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 1})
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": nlp, "spec": PS_WORKER})
    assert r.status_code == 409
    assert "gpus: 2 asked" in r.json["message"]
    assert len(env.slurm.requests) == 1


def test_spec_jobs_respect_quota_and_permission(env: Env) -> None:
    vision = env.world.projects["vision"]
    env.api("admin").put(f"/api/v1/projects/{vision}/quota", json={"shards": 4})
    r = env.api("bob").post("/api/v1/jobs/spec", json={"project_id": vision, "spec": HELLO})
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    r = env.api("bob").post(
        "/api/v1/jobs/spec", json={"project_id": vision, "spec": {**HELLO, "priority": "high"}}
    )
    assert r.status_code == 422  # vision may not use high
    r = env.api("alice").post("/api/v1/jobs/spec", json={"project_id": vision, "spec": HELLO})
    assert r.status_code == 404
    r = env.api("victor").post("/api/v1/jobs/spec", json={"project_id": vision, "spec": HELLO})
    assert r.status_code == 403
    assert env.slurm.submitted == []
