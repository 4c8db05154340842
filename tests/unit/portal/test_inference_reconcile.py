"""The inference reconciler: its pure plan, table by table, and what only the daemon does —
a device change, a refused replica, a dry run, the quick passes, a deleted service's name,
Slurm away."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.control.daemon import Daemon
from portal.extensions import db
from portal.inference.models import InferenceService
from portal.inference.plan import Do, ReplicaRow, Seen, ServiceView, plan
from slurm_plugins.client.errors import ControllerUnavailable
from slurm_plugins.client.models import Job, JobState
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_registry import clock, reg  # noqa: F401 -- fixture
from tests.unit.portal.test_registry_runs import import_digits, set_job, submitted

pytestmark = pytest.mark.usefixtures("users_own_files")

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


# ---------------------------------------------------------------------- the plan
def job(job_id: int, state: JobState = JobState.RUNNING, *, name: str = "", **kw: Any) -> Job:
    return Job(
        job_id=job_id,
        name=name or f"svc-1-r{job_id % 10}-cpu",
        user="alice",
        account="nlp",
        partition="cpu",
        qos="normal",
        state=state,
        **kw,
    )


def row(index: int, job_id: int | None = None, url: str | None = None, **kw: Any) -> ReplicaRow:
    return ReplicaRow(index, job_id, url, kw.get("failures", 0), kw.get("retry_at"))


def view(*rows: ReplicaRow, seen: dict[int, Seen] | None = None, **kw: Any) -> ServiceView:
    base = ServiceView(
        id=1,
        state="running",
        replicas=len(rows) or 1,
        expires_at=None,
        tag="cpu",
        encrypted=False,
        model_copy=True,
        rows=tuple(rows),
        seen=seen or {},
    )
    return dataclasses.replace(base, **kw)


URL = "http://10.0.0.1:8000"
READY = row(0, 10, URL)
RUNNING = {0: Seen(job(10), URL)}  # each look reads a running replica's address again
MOVED = "http://10.0.0.2:8001"

Expected = list[tuple[Do, int | None, int | None]]  # what, replica, job to cancel
CASES: list[tuple[str, ServiceView, Expected]] = [
    (
        "new service",
        view(replicas=1, model_copy=False),
        [(Do.STAGE, None, None), (Do.SUBMIT, 0, None)],
    ),
    ("settled", view(READY, seen=RUNNING), []),
    ("unknown to Slurm: wait", view(row(0, 10)), []),
    ("address found", view(row(0, 10), seen={0: Seen(job(10), URL)}), [(Do.READY, 0, 10)]),
    ("moved", view(READY, seen={0: Seen(job(10), MOVED)}), [(Do.READY, 0, 10)]),
    ("address lost", view(READY, seen={0: Seen(job(10))}), [(Do.LOST, 0, 10)]),
    (
        "pending: no address yet",
        view(row(0, 10), seen={0: Seen(job(10, JobState.PENDING), URL)}),
        [],
    ),
    ("job ended", view(READY, seen={0: Seen(job(10, JobState.FAILED))}), [(Do.FAILED, 0, 10)]),
    ("backing off", view(row(0, failures=1, retry_at=NOW + timedelta(seconds=5))), []),
    ("backoff over", view(row(0, failures=1, retry_at=NOW)), [(Do.SUBMIT, 0, None)]),
    (
        "scaled down",
        view(READY, row(1, 11, URL), replicas=1, seen={**RUNNING, 1: Seen(job(11))}),
        [(Do.RETIRE, 1, 11)],
    ),
    (
        "scaled down, its job ended",
        view(READY, row(1, 11), replicas=1, seen={**RUNNING, 1: Seen(job(11, JobState.TIMEOUT))}),
        [(Do.RETIRE, 1, None)],
    ),
    ("stopped", view(READY, state="stopped", seen=RUNNING), [(Do.RETIRE, 0, 10)]),
    (
        "stopped, encrypted",
        view(READY, state="stopped", encrypted=True, seen=RUNNING),
        [(Do.RETIRE, 0, 10), (Do.UNSTAGE, None, None)],
    ),
    (
        "expired",
        view(READY, expires_at=NOW, seen=RUNNING),
        [(Do.EXPIRE, None, None), (Do.RETIRE, 0, 10)],
    ),
    (
        "deleted",
        view(READY, state="deleting", model_copy=True, seen=RUNNING),
        [(Do.RETIRE, 0, 10), (Do.REMOVE, None, None)],
    ),
    (
        "device changed",
        view(READY, tag="gpu1", seen=RUNNING),
        [(Do.RETIRE, 0, 10), (Do.SUBMIT, 0, None)],
    ),
]


@pytest.mark.parametrize(("case", "service", "expected"), CASES, ids=[c[0] for c in CASES])
def test_plan(case: str, service: ServiceView, expected: Expected) -> None:
    steps = plan(service, NOW)
    assert [(s.do, s.index, s.job_id) for s in steps] == expected
    assert all(s.reason for s in steps)


def test_a_failure_keeps_the_exit_code_and_the_log_tail() -> None:
    seen = {0: Seen(job(10, JobState.FAILED, exit_code=3), tail="Traceback: out of memory")}
    [step] = plan(view(READY, seen=seen), NOW)
    assert step.reason == "job 10 FAILED, exit code 3: Traceback: out of memory"
    assert step.line() == f"service 1: record failure replica 0 (job 10): {step.reason}"


# ---------------------------------------------------------------------- what the daemon does
def deploy(env: Env, **body: Any) -> dict[str, Any]:
    model = import_digits(env)
    v1 = env.api("alice").get(f"/api/v1/models/{model}/versions").json[0]["id"]
    r = env.api("alice").post("/api/v1/inference", json={"version_id": v1, **body})
    assert r.status_code == 201, r.json
    reconcile(env)
    seen = env.api("alice").get(f"/api/v1/inference/{r.json['id']}").json
    return {**seen, "token": r.json["token"]}


def test_a_new_device_replaces_the_replicas(reg: Env) -> None:  # noqa: F811
    svc = deploy(reg)
    url = f"/api/v1/inference/{svc['id']}"
    [old] = svc["replica_jobs"]
    r = reg.api("alice").patch(url, json={"device": "gpu", "gpus": 1})
    assert r.json["device"] == "gpu"
    assert ("alice", old["job_id"]) not in reg.slurm.cancelled  # recorded only
    done = reconcile(reg)
    assert done[0].endswith("the service's device is now gpu1")
    assert ("alice", old["job_id"]) in reg.slurm.cancelled
    [new] = reg.api("alice").get(url).json["replica_jobs"]
    _, _, props = submitted(reg, new["job_id"])
    assert props["name"] == f"svc-{svc['id']}-r0-gpu1"
    assert props["gres"] == "gpu:1"
    assert reconcile(reg) == []  # replaced once


def test_a_refused_replica_says_why_and_backs_off(reg: Env) -> None:  # noqa: F811
    reg.slurm.reject = "Invalid qos specification"
    svc = deploy(reg)
    [replica] = svc["replica_jobs"]
    assert (replica["job_id"], replica["failures"]) == (None, 1)
    assert replica["last_error"].startswith("Could not start: Slurm refused the job")
    assert svc["health"] == "failing"
    reg.slurm.reject = None
    assert reconcile(reg) == []  # backing off
    clock(reg).at += timedelta(seconds=11)
    reconcile(reg)
    [replica] = reg.api("alice").get(f"/api/v1/inference/{svc['id']}").json["replica_jobs"]
    assert replica["job_id"] is not None


def test_a_dry_run_changes_nothing(reg: Env) -> None:  # noqa: F811
    model = import_digits(reg)
    v1 = reg.api("alice").get(f"/api/v1/models/{model}/versions").json[0]["id"]
    svc = reg.api("alice").post("/api/v1/inference", json={"version_id": v1}).json
    report = Daemon(reg.app, dry_run=True).run_pass(full=True)
    assert report.lines == [f"would service {svc['id']}: submit replica 0: a new replica"]
    assert reg.slurm.submitted == []
    assert reg.api("alice").get(f"/api/v1/inference/{svc['id']}").json["replica_jobs"] == []


def test_quick_passes_look_only_at_what_changed(reg: Env) -> None:  # noqa: F811
    svc = deploy(reg)
    [replica] = svc["replica_jobs"]
    set_job(reg, replica["job_id"], JobState.RUNNING)
    daemon = Daemon(reg.app)
    daemon.run_pass(full=True)
    asked: list[int] = []
    real = reg.slurm.job
    reg.slurm.job = lambda job_id: asked.append(job_id) or real(job_id)  # type: ignore[method-assign]
    # a replica without an address is looked at on every quick pass
    assert daemon.run_pass(full=False).services == 1
    assert asked == [replica["job_id"]]
    # a settled service is not: it waits for the next full pass
    with reg.app.app_context():
        svc_row = db.session.get(InferenceService, svc["id"])
        assert svc_row is not None
        svc_row.replica_rows[0].url = "http://127.0.0.1:9"  # nothing listens there
        db.session.commit()
    daemon.run_pass(full=False)
    asked.clear()
    report = daemon.run_pass(full=False)
    assert (report.services, asked) == (0, [])
    # a call that finds the replica gone drops its address: the next quick pass looks again
    call = reg.app.test_client().post(
        svc["url"], json={}, headers={"X-Service-Token": svc["token"]}
    )
    assert call.status_code == 502
    assert daemon.run_pass(full=False).services == 1
    # a change of what the service should be is seen at once
    reg.api("alice").patch(f"/api/v1/inference/{svc['id']}", json={"device": "gpu"})
    report = daemon.run_pass(full=False)
    assert report.services == 1
    assert any("device is now gpu1" in line for line in report.lines)
    reg.slurm.job = real  # type: ignore[method-assign]


def test_a_deleted_services_name_is_free_once_it_is_gone(reg: Env) -> None:  # noqa: F811
    svc = deploy(reg, name="web")
    alice = reg.api("alice")
    assert alice.delete(f"/api/v1/inference/{svc['id']}").status_code == 204
    again = alice.post("/api/v1/inference", json={"version_id": svc["version_id"], "name": "web"})
    assert again.status_code == 409
    assert (
        again.json["message"]
        == "A service named web is still being deleted. Try again in a moment."
    )
    # its model cannot go either while its replica may still run
    r = alice.delete(f"/api/v1/models/{svc['model_id']}")
    assert r.status_code == 409
    assert "still stopping" in r.json["message"]
    reconcile(reg)
    again = alice.post("/api/v1/inference", json={"version_id": svc["version_id"], "name": "web"})
    assert again.status_code == 201


def test_slurm_away_stops_the_pass_and_loses_nothing(reg: Env) -> None:  # noqa: F811
    svc = deploy(reg)
    [replica] = svc["replica_jobs"]

    def away(job_id: int) -> Job:
        raise ControllerUnavailable("slurmctld does not answer", argv=("squeue",))

    reg.slurm.job = away  # type: ignore[method-assign]
    assert Daemon(reg.app).tick() is None  # logged; the next pass tries again
    seen = reg.api("alice").get(f"/api/v1/inference/{svc['id']}").json["replica_jobs"]
    assert seen == [replica]  # not taken for a failed job
