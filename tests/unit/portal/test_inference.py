"""Inference services: one-click deploy, the lifecycle (edit/scale, stop, start, delete),
restart of failed replicas, expiry, the IP allow-list, the per-service token, and calls
proxied to a real replica process (the program a replica job runs) and counted.

Requests only record what a service should be; each step here runs one pass of the portal's
control daemon (``reconcile``), as ``aipool reconcile`` does every few seconds."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sklearn.datasets import load_digits

from portal.extensions import db
from portal.inference.service import STARTING
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_registry import T0, clock, reg  # noqa: F401 -- fixture
from tests.unit.portal.test_registry_runs import import_digits, set_job, submitted, train
from tests.unit.portal.test_userdirs import run_dirs

# the jobs' files are written here by this process, standing in for the job's user
pytestmark = pytest.mark.usefixtures("users_own_files")


@pytest.fixture
def deployed(reg: Env) -> Iterator[tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]]]:  # noqa: F811
    model_id = import_digits(reg)
    v2 = train(reg, model_id)
    r = reg.api("alice").post("/api/v1/inference", json={"version_id": v2["id"]})
    assert r.status_code == 201, r.json
    assert r.json["replica_jobs"] == []  # the request submits nothing: the reconciler does
    assert reconcile(reg) == [f"service {r.json['id']}: submit replica 0: a new replica"]
    svc = {
        **reg.api("alice").get(f"/api/v1/inference/{r.json['id']}").json,
        "token": r.json["token"],
    }
    procs: list[subprocess.Popen[bytes]] = []
    yield reg, svc, procs
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def start_replica(env: Env, job_id: int, procs: list[subprocess.Popen[bytes]]) -> None:
    """Run what the replica job runs (its program, key and connection file), and mark the job
    running in the fake Slurm."""
    _, script, _ = submitted(env, job_id)
    lines = script.splitlines()
    program = next(x for x in lines if x.startswith("AIPOOL_PROGRAM=("))
    argv = shlex.split(program.removeprefix("AIPOOL_PROGRAM=(").removesuffix(")"))
    # its key, and the ports it may listen on (the portal's PROXY_PORT_RANGE)
    exported = {
        name: shlex.split(next(x for x in lines if x.startswith(f"export {name}=")))[1].split(
            "=", 1
        )[1]
        for name in ("SERVE_KEY", "SERVE_PORTS")
    }
    conn = Path(argv[argv.index("--conn") + 1])
    proc = subprocess.Popen(
        [sys.executable, *argv[1:], "--host", "127.0.0.1"],
        env={**os.environ, **exported, "SLURM_JOB_ID": str(job_id)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs.append(proc)
    deadline = time.monotonic() + 60
    while not conn.is_file():
        assert time.monotonic() < deadline, "the replica did not start within 60 s"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
            raise AssertionError(f"the replica exited with {proc.returncode}")
    # running on cpu1, whose NodeAddr in the recorded sinfo is 127.0.0.1
    env.slurm._jobs[job_id] = dataclasses.replace(
        env.slurm._jobs[job_id], state=JobState.RUNNING, nodes="cpu1"
    )


def test_deploy_call_scale_restart_stop_start_delete(
    deployed: tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]],
) -> None:
    env, svc, procs = deployed
    alice = env.api("alice")
    token = svc["token"]
    assert svc["state"] == "running"
    assert svc["url"] == f"/api/v1/inference/{svc['id']}/predict"
    [replica] = svc["replica_jobs"]
    user, _, props = submitted(env, replica["job_id"])
    assert (user, props["account"], props["name"]) == ("alice", "nlp", f"svc-{svc['id']}-r0-cpu")
    assert props["partition"] == "cpu"

    anon = env.app.test_client()
    digits = load_digits()
    call = lambda i, tok=token: anon.post(  # noqa: E731
        svc["url"], json={"pixels": digits.data[i].tolist()}, headers={"X-Service-Token": tok}
    )
    asked: list[int] = []
    real_job = env.slurm.job
    env.slurm.job = lambda job_id: asked.append(job_id) or real_job(job_id)  # type: ignore[method-assign]
    r = call(0)
    assert r.status_code == 503
    assert (r.json["error"], r.json["message"]) == ("unavailable", STARTING)
    start_replica(env, replica["job_id"], procs)
    assert alice.get(f"/api/v1/inference/{svc['id']}").json["ready_replicas"] == 0
    assert call(0).status_code == 503  # ready once the reconciler has read its address
    assert asked == []  # neither a look nor a call asks Slurm
    reconcile(env)
    seen = alice.get(f"/api/v1/inference/{svc['id']}").json
    assert seen["ready_replicas"] == 1
    asked.clear()
    for i in range(3):
        r = call(i)
        assert r.status_code == 200, r.json
        assert r.json["label"] == str(digits.target[i])
    env.slurm.job = real_job  # type: ignore[method-assign]
    assert asked == []
    health = anon.get(f"/api/v1/inference/{svc['id']}/health", headers={"X-Service-Token": token})
    assert health.json["status"] == "ok"
    assert call(0, "svc_wrong").status_code == 404
    assert anon.post(svc["url"], json={}).status_code == 404
    bad = call(0)
    assert bad.status_code == 200
    r = anon.post(svc["url"], json={"pixels": [1]}, headers={"X-Service-Token": token})
    assert r.status_code == 422
    # not the refused ones, nor the health check (a GET changes nothing)
    assert alice.get(f"/api/v1/inference/{svc['id']}").json["calls"] == 5

    # the allow-list
    r = alice.patch(f"/api/v1/inference/{svc['id']}", json={"allow_ips": ["10.0.0.0/8"]})
    assert r.json["allow_ips"] == ["10.0.0.0/8"]
    assert call(0).status_code == 403
    alice.patch(f"/api/v1/inference/{svc['id']}", json={"allow_ips": ["127.0.0.1"]})
    assert call(0).status_code == 200
    bad_ip = alice.patch(f"/api/v1/inference/{svc['id']}", json={"allow_ips": ["300.1.1.1"]})
    assert bad_ip.status_code == 422

    # scale up and back down: each replica is a job
    url = f"/api/v1/inference/{svc['id']}"
    r = alice.patch(url, json={"replicas": 2})
    assert (r.json["replicas"], len(r.json["replica_jobs"])) == (2, 1)  # recorded, not done
    reconcile(env)
    jobs = [x["job_id"] for x in alice.get(url).json["replica_jobs"]]
    assert len(jobs) == 2
    assert jobs[0] == replica["job_id"]
    alice.patch(url, json={"replicas": 1})
    assert reconcile(env) == [
        f"service {svc['id']}: retire replica 1 (job {jobs[1]}): the service wants 1 replica(s)"
    ]
    assert [x["job_id"] for x in alice.get(url).json["replica_jobs"]] == jobs[:1]
    assert ("alice", jobs[1]) in env.slurm.cancelled

    # a replica whose job failed says why and backs off, then is restarted
    set_job(env, jobs[0], JobState.FAILED)
    reconcile(env)
    r = alice.get(f"/api/v1/inference/{svc['id']}").json
    assert r["health"] == "failing"
    [failed] = r["replica_jobs"]
    assert (failed["job_id"], failed["failures"], failed["restarts"]) == (None, 1, 1)
    assert failed["last_error"].startswith(f"job {jobs[0]} FAILED")
    assert r["last_error"] == failed["last_error"]
    reconcile(env)  # still backing off
    assert alice.get(f"/api/v1/inference/{svc['id']}").json["replica_jobs"][0]["job_id"] is None
    clock(env).at += timedelta(seconds=11)  # past the first backoff (10 s)
    reconcile(env)
    r = alice.get(f"/api/v1/inference/{svc['id']}").json
    [again] = r["replica_jobs"]
    assert again["job_id"] not in (None, jobs[0])
    assert (again["restarts"], again["ready"]) == (1, False)

    # stop, start, a new token, delete
    r = alice.post(f"/api/v1/inference/{svc['id']}/stop")
    assert r.json["state"] == "stopped"
    assert call(0).status_code == 503
    reconcile(env)
    assert alice.get(url).json["replica_jobs"] == []
    assert ("alice", again["job_id"]) in env.slurm.cancelled
    r = alice.post(f"/api/v1/inference/{svc['id']}/start")
    assert r.json["state"] == "running"
    reconcile(env)
    assert len(alice.get(url).json["replica_jobs"]) == 1
    new = alice.post(f"/api/v1/inference/{svc['id']}/token").json["token"]
    assert call(0, token).status_code == 404
    assert call(0, new).status_code == 503  # the restarted replica is still starting
    workdir = Path(env.app.config["MODEL_WORK"])
    assert run_dirs(workdir)
    [last] = alice.get(url).json["replica_jobs"]
    assert alice.delete(f"/api/v1/inference/{svc['id']}").status_code == 204
    assert alice.get(f"/api/v1/inference/{svc['id']}").status_code == 404
    assert alice.get("/api/v1/inference").json == []
    assert call(0, new).status_code == 404
    assert run_dirs(workdir)  # until the reconciler has cancelled its replica
    reconcile(env)
    assert ("alice", last["job_id"]) in env.slurm.cancelled
    assert run_dirs(workdir) == []  # alice's own directory stays, empty
    assert reconcile(env) == []  # the row is gone too


def test_expiry_stops_the_service(
    deployed: tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]],
) -> None:
    env, svc, _ = deployed
    alice = env.api("alice")
    ends = T0 + timedelta(hours=1)
    past = alice.patch(f"/api/v1/inference/{svc['id']}", json={"expires_at": T0.isoformat()})
    assert past.status_code == 422
    r = alice.patch(f"/api/v1/inference/{svc['id']}", json={"expires_at": ends.isoformat()})
    assert r.status_code == 200
    job = r.json["replica_jobs"][0]["job_id"]
    clock(env).at = ends
    anon = env.app.test_client()
    gone = anon.post(svc["url"], json={}, headers={"X-Service-Token": svc["token"]})
    assert gone.status_code == 410  # at once, before the reconciler has stopped it
    reconcile(env)
    r = alice.get(f"/api/v1/inference/{svc['id']}").json
    assert (r["state"], r["replica_jobs"]) == ("expired", [])
    assert ("alice", job) in env.slurm.cancelled
    assert alice.post(f"/api/v1/inference/{svc['id']}/start").status_code == 409


def test_service_permissions(
    deployed: tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]],
) -> None:
    env, svc, _ = deployed
    url = f"/api/v1/inference/{svc['id']}"
    # gina reads nlp (viewer through a group): sees it, may not change it
    assert env.api("gina").get(url).status_code == 200
    for method, path, body in (
        ("patch", url, {"replicas": 3}),
        ("post", f"{url}/stop", None),
        ("post", f"{url}/token", None),
        ("delete", url, None),
    ):
        kw = {"json": body} if body is not None else {}
        assert getattr(env.api("gina"), method)(path, **kw).status_code == 403
        for other in ("bob", "tina", "nobody"):
            assert getattr(env.api(other), method)(path, **kw).status_code == 404
    for other in ("bob", "tina", "nobody"):
        assert env.api(other).get(url).status_code == 404
        assert env.api(other).get("/api/v1/inference").json == []
    assert env.api("erin").get(url).status_code == 200  # the domain's admin
    assert len(env.api("alice").get(url).json["replica_jobs"]) == 1  # nothing changed


def test_deploy_needs_a_visible_ready_version(reg: Env) -> None:  # noqa: F811
    model_id = import_digits(reg)
    alice = reg.api("alice")
    versions = alice.get(f"/api/v1/models/{model_id}/versions").json
    v1 = versions[0]["id"]
    assert reg.api("bob").post("/api/v1/inference", json={"version_id": v1}).status_code == 404
    # shared read-only with dave (another tenant): he may serve it in his own project
    alice.post(
        f"/api/v1/models/{model_id}/shares",
        json={"grantee_kind": "user", "grantee_id": reg.world.users["dave"]},
    )
    r = reg.api("dave").post(
        "/api/v1/inference", json={"version_id": v1, "project_id": reg.world.projects["cs101"]}
    )
    assert r.status_code == 201, r.json
    reconcile(reg)
    r = reg.api("dave").get(f"/api/v1/inference/{r.json['id']}")
    user, _, props = submitted(reg, r.json["replica_jobs"][0]["job_id"])
    assert (user, props["account"]) == ("dave", "cs101")
    # ... but not in alice's project
    r = reg.api("dave").post(
        "/api/v1/inference",
        json={"version_id": v1, "project_id": reg.world.projects["nlp"], "name": "x"},
    )
    assert r.status_code == 404
    r = alice.post("/api/v1/inference", json={"version_id": v1, "device": "fraction", "shards": 8})
    assert r.status_code == 201
    reconcile(reg)
    [replica] = alice.get(f"/api/v1/inference/{r.json['id']}").json["replica_jobs"]
    _, _, props = submitted(reg, replica["job_id"])
    assert (props["gres"], props["partition"]) == ("shard:8", "gpu")
    dup = alice.post("/api/v1/inference", json={"version_id": v1, "name": r.json["name"]})
    assert dup.status_code == 409


def test_pages_import_deploy_scale_stop_delete(reg: Env) -> None:  # noqa: F811
    from tests.unit.portal.test_pages import csrf_of, login

    client = login(reg, "alice")
    page = client.get("/presets").get_data(as_text=True)
    assert page.count("<tr>") == 22  # header and the 21 presets
    r = client.post(
        "/presets/digits-classifier/import",
        data={"project_id": reg.world.projects["nlp"], "csrf_token": csrf_of(page)},
    )
    assert r.status_code == 302
    model_page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "Handwritten digit classifier" in model_page
    model_id = int(r.headers["Location"].rsplit("/", 1)[1])
    v2 = train(reg, model_id)
    assert v2["status"] == "ready"
    token = csrf_of(model_page)
    r = client.post(f"/models/{model_id}/versions/2/deploy", data={"csrf_token": token})
    assert r.status_code == 302
    svc_url = r.headers["Location"]
    detail = client.get(svc_url).get_data(as_text=True)
    assert "The service token, shown only this once: svc_" in detail
    service_id = int(svc_url.rsplit("/", 1)[1])
    r = client.post(f"/inference/{service_id}/scale", data={"replicas": 2, "csrf_token": token})
    assert r.status_code == 302
    assert reg.api("alice").get(f"/api/v1/inference/{service_id}").json["replicas"] == 2
    r = client.post(
        f"/inference/{service_id}/edit",
        data={
            "allow_ips": "10.0.0.0/8, 127.0.0.1",
            "expires_at": "2026-12-01T10:30",
            "csrf_token": token,
        },
    )
    assert r.status_code == 302
    seen = reg.api("alice").get(f"/api/v1/inference/{service_id}").json
    assert seen["allow_ips"] == ["10.0.0.0/8", "127.0.0.1/32"]
    assert seen["expires_at"].startswith("2026-12-01T10:30")
    client.post(
        f"/inference/{service_id}/edit",
        data={"allow_ips": "nope", "expires_at": "", "csrf_token": token},
    )
    assert reg.api("alice").get(f"/api/v1/inference/{service_id}").json["allow_ips"] == [
        "10.0.0.0/8",
        "127.0.0.1/32",
    ]  # refused whole
    client.post(f"/inference/{service_id}/stop", data={"csrf_token": token})
    assert reg.api("alice").get(f"/api/v1/inference/{service_id}").json["state"] == "stopped"
    assert "Inference services" in client.get("/inference").get_data(as_text=True)
    assert client.post(f"/inference/{service_id}/stop").status_code == 400  # no CSRF token
    r = client.post(f"/inference/{service_id}/delete", data={"csrf_token": token})
    assert r.headers["Location"].endswith("/inference")
    assert client.get("/models").status_code == 200
    assert login(reg, "bob").get(f"/models/{model_id}").status_code == 404


def test_reconcile_command_restarts_failed_replicas(
    deployed: tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]],
) -> None:
    env, svc, _ = deployed
    job = svc["replica_jobs"][0]["job_id"]
    set_job(env, job, JobState.NODE_FAIL)
    result = env.app.test_cli_runner().invoke(args=["inference", "reconcile"])
    assert result.exit_code == 0, result.output
    assert f"{svc['id']}\t{svc['name']}\trunning\t0/1 ready" in result.output
    [replica] = env.api("alice").get(f"/api/v1/inference/{svc['id']}").json["replica_jobs"]
    assert (replica["restarts"], replica["job_id"] != job) == (1, True)


def test_the_replica_address_comes_from_slurm_not_from_the_job(
    deployed: tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]],
) -> None:
    env, svc, _ = deployed
    from portal.inference.models import InferenceService

    job_id = svc["replica_jobs"][0]["job_id"]
    env.slurm._jobs[job_id] = dataclasses.replace(
        env.slurm._jobs[job_id], state=JobState.RUNNING, nodes="gpu2"
    )
    with env.app.app_context():
        workdir = Path(db.session.get(InferenceService, svc["id"]).workdir)
    conn = workdir / "replica-0.json"
    url = f"/api/v1/inference/{svc['id']}"
    for bad in (
        {"host": "10.9.9.9", "port": 80, "job_id": job_id},  # a privileged port
        {"host": "127.0.0.1", "port": 6820, "job_id": job_id},  # slurmrestd: not in the range
        {"host": "127.0.0.1", "port": 8000, "job_id": job_id},
        {"host": "10.9.9.9", "port": 50000, "job_id": job_id - 1},  # an earlier run
        {"port": "x", "job_id": job_id},
        ["not", "an", "object"],
    ):
        conn.write_text(json.dumps(bad))
        reconcile(env)
        assert env.api("alice").get(url).json["ready_replicas"] == 0
    conn.write_text(json.dumps({"host": "metadata.internal", "port": 50000, "job_id": job_id}))
    reconcile(env)
    assert env.api("alice").get(url).json["ready_replicas"] == 1
    with env.app.app_context():
        replica = db.session.get(InferenceService, svc["id"]).replica_rows[0]
        assert replica.url == "http://127.0.0.1:50000"  # gpu2's NodeAddr, not the file's host


def test_a_crash_looping_replica_waits_longer_each_time_up_to_a_cap() -> None:
    from portal.inference.plan import backoff

    waits = [backoff(n).total_seconds() for n in range(1, 10)]
    assert waits[:4] == [10, 20, 40, 80]
    assert waits == sorted(waits)
    assert max(waits) == 600
    assert backoff(10_000).total_seconds() == 600


def test_a_stopped_service_keeps_no_decrypted_copy(reg: Env) -> None:  # noqa: F811
    """An encrypted version is decrypted into the service's run directory only while its
    replicas may run: stopping removes the copy, starting stages it again."""
    from portal.inference.models import InferenceService
    from tests.unit.portal.test_registry import _share

    model_id = import_digits(reg)
    v2 = train(reg, model_id)
    _share(reg, model_id, "dave", "read")  # another tenant: encrypted at rest
    alice = reg.api("alice")
    version = alice.get(f"/api/v1/models/{model_id}/versions/{v2['number']}").json
    assert version["encrypted"] is True
    svc = alice.post("/api/v1/inference", json={"version_id": v2["id"]}).json
    with reg.app.app_context():
        model = Path(db.session.get(InferenceService, svc["id"]).workdir) / "model"
    assert any(p.is_file() for p in model.rglob("*"))  # decrypted for its replicas
    reconcile(reg)
    assert alice.post(f"/api/v1/inference/{svc['id']}/stop").status_code == 200
    reconcile(reg)
    assert not model.exists()
    assert alice.post(f"/api/v1/inference/{svc['id']}/start").status_code == 200
    assert not model.exists()  # the request only records it
    reconcile(reg)
    assert any(p.is_file() for p in model.rglob("*"))
    assert [p.name for p in model.parent.iterdir() if p.name.startswith(".model")] == []
    assert alice.delete(f"/api/v1/inference/{svc['id']}").status_code == 204
    reconcile(reg)
    assert not model.parent.exists()
