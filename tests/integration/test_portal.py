"""The portal against the lab cluster: jobs run as their user, quotas reach Slurm and hold.

The portal gets its own SQLite database. Slurm objects this module creates are named
``pt-…`` and removed at the end; the lab's demo tenants are only read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_migrate import upgrade

from aipool.lab.cluster import Lab
from aipool.lab.settings import portal_settings
from portal import create_app
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token, hash_password
from portal.roles.service import role_by_name
from portal.tenancy.models import Domain, DomainAdmin, Membership, Project
from slurm_plugins.admission import HOOK_FILE, TABLE_FILE
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from tests.integration.conftest import wait_job, wait_until

pytestmark = pytest.mark.slurm

SUFFIX = str(os.getpid())
DOMAIN = f"pt-dom-{SUFFIX}"
PROJECT = f"pt-proj-{SUFFIX}"
# A new account is no tenant of the lab's admission policy, whose hook refuses jobs on it from
# anyone but root ("unrestricted": operators and the test suite); Slurm's association limits
# bind root as well. root gets an extra association only, its own account is not touched.
SUBMITTER = "root"
SLEEP = "#!/bin/bash\nsleep 300\n"
PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "jobspec" / "programs"
PASSWORD = "integration password"


class Portal:
    def __init__(self, app: Flask, tokens: dict[str, str], ids: dict[str, int]) -> None:
        self.app, self.tokens, self.ids = app, tokens, ids

    def api(self, user: str) -> FlaskClient:
        client = self.app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.tokens[user]}"
        # the lab's site speaks Chinese by default; these checks read the English words
        client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "en"
        return client


@pytest.fixture
def portal(lab: Lab, tmp_path: Path) -> Iterator[Portal]:
    """Admin ``pt-admin``; the lab's ``research/nlp`` with alice (read-only mirror); and a
    fresh ``pt-`` domain and project with a domain admin and root as member."""
    # the lab's hook, copied: this portal's tenants are not the lab's, and a quota saved
    # here installs the hook's table where ADMISSION_DIR says
    admission = tmp_path / "admission"
    admission.mkdir()
    for name in (HOOK_FILE, TABLE_FILE):
        shutil.copy2(lab.cfg.admission / name, admission / name)
    app = create_app(
        {
            "SECRET_KEY": "integration",
            "DATABASE_URL": f"sqlite:///{tmp_path}/portal.db",
            **portal_settings(),
            "ADMISSION_DIR": str(admission),
        }
    )
    with app.app_context():
        upgrade()
        s = db.session
        users = {
            n: User(
                username=n,
                password_hash=hash_password(PASSWORD),
                is_platform_admin=n == "pt-admin",
            )
            for n in ("pt-admin", "pt-dadmin", "alice", SUBMITTER)
        }
        s.add_all(users.values())
        research = Domain(name="research", description="Research domain")
        nlp = Project(name="nlp", domain=research, description="NLP group", qos="normal,low,high")
        dom = Domain(name=DOMAIN, description="portal integration test")
        proj = Project(
            name=PROJECT, domain=dom, description="portal integration test", qos="normal,low"
        )
        s.add_all([research, nlp, dom, proj])
        s.flush()
        member = role_by_name(s, "member").id
        s.add_all(
            [
                Membership(project_id=nlp.id, user_id=users["alice"].id, role_id=member),
                Membership(project_id=proj.id, user_id=users[SUBMITTER].id, role_id=member),
                DomainAdmin(domain_id=dom.id, user_id=users["pt-dadmin"].id),
            ]
        )
        s.commit()
        tokens = {n: create_token(s, u, "it", days=1)[1] for n, u in users.items()}
        ids = {"nlp": nlp.id, "proj": proj.id, "dom": dom.id}
    yield Portal(app, tokens, ids)
    with app.app_context():
        db.engine.dispose()


def _remove_test_accounts(client: SlurmClient) -> None:
    users = [(a.user, a.account) for a in client.associations() if a.user and a.account == PROJECT]
    client.remove_associations(users=users, accounts=[PROJECT, DOMAIN])


def _submit(portal: Portal, user: str, project: str, **extra: Any) -> int:
    body = {
        "project_id": portal.ids[project],
        "name": "pt-job",
        "time_limit": 2,
        "script": "#!/bin/bash\nid -un\nsleep 1\n",
        **extra,
    }
    r = portal.api(user).post("/api/v1/jobs", json=body)
    assert r.status_code == 201, r.json
    return int(r.json["job_id"])


def test_a_job_submitted_as_alice_runs_as_alice(
    portal: Portal, client: SlurmClient, lab: Lab
) -> None:
    job_id = _submit(portal, "alice", "nlp", shards=1, partition="gpu")
    job = wait_job(client, job_id, lambda j: True, 10)
    assert (job.user, job.account) == ("alice", "nlp")
    seen = portal.api("alice").get(f"/api/v1/jobs/{job_id}").json
    assert seen["user"] == "alice"

    def finished() -> bool:
        recs = client.accounting(job_ids=[job_id])
        return bool(recs) and recs[0].state.is_finished

    wait_until(finished, 60, interval=1)
    [rec] = client.accounting(job_ids=[job_id])
    assert rec.state is JobState.COMPLETED
    assert rec.user == "alice"
    output = Path(lab.cfg.root) / "portal" / "users" / "alice" / f"slurm-{job_id}.out"
    try:
        assert output.read_text().split() == ["alice"]
    finally:
        output.unlink(missing_ok=True)
    # the portal still shows the finished job (from accounting), to its owner only
    assert portal.api("alice").get(f"/api/v1/jobs/{job_id}").json["state"] == "COMPLETED"
    assert portal.api(SUBMITTER).get(f"/api/v1/jobs/{job_id}").status_code == 404


def test_a_spec_job_runs_as_its_user(portal: Portal, client: SlurmClient, lab: Lab) -> None:
    spec = {"name": "pt-spec", "resources": {"gpus": 0.25, "time": "2m"}, "command": ["id", "-un"]}
    r = portal.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": portal.ids["nlp"], "spec": spec}
    )
    assert r.status_code == 201, r.json
    job_id = int(r.json["job_id"])

    def finished() -> bool:
        recs = client.accounting(job_ids=[job_id])
        return bool(recs) and recs[0].state.is_finished

    wait_until(finished, 60, interval=1)
    [rec] = client.accounting(job_ids=[job_id])
    assert (rec.state, rec.user, rec.account) == (JobState.COMPLETED, "alice", "nlp")
    assert rec.tres_alloc["gres/shard"] == 8
    output = Path(lab.cfg.root) / "portal" / "users" / "alice" / f"pt-spec-{job_id}.out"
    try:
        assert "alice" in output.read_text().split()
    finally:
        output.unlink(missing_ok=True)


def test_a_ps_worker_spec_runs_as_its_user_as_one_heterogeneous_job(
    portal: Portal, client: SlurmClient, lab: Lab
) -> None:
    """Both roles start together as alice's components of one job and find each other."""
    # alice's job reads the program from where she may (the checkout may lie in root's home)
    shared = Path(tempfile.mkdtemp(prefix="pt-ps-", dir=lab.cfg.jobs))
    shared.chmod(0o755)
    program = shutil.copy(PROGRAMS / "rendezvous.py", shared / "rendezvous.py")
    Path(program).chmod(0o644)
    spec = {
        "name": "pt-ps",
        "command": ["python3", str(program)],
        "resources": {"time": 5},
        "topology": {
            "kind": "ps_worker",
            "roles": {
                "ps": {"resources": {"cpus": 1}},
                "worker": {"replicas": 2, "resources": {"gpus": 0.25}},
            },
        },
    }
    r = portal.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": portal.ids["nlp"], "spec": spec}
    )
    assert r.status_code == 201, r.json
    job_id = int(r.json["job_id"])
    queued: list[tuple[int | None, str, str, str]] = []

    def listed() -> bool:
        queued[:] = sorted(
            (j.het_job_offset, j.user, j.account, j.partition)
            for j in client.jobs(active_only=False)
            if job_id in (j.job_id, j.het_job_id)
        )
        return len(queued) == 2

    wait_until(listed, 10)
    assert queued == [(0, "alice", "nlp", "cpu"), (1, "alice", "nlp", "gpu")]

    def finished() -> bool:
        recs = [r for r in client.accounting(job_ids=[job_id]) if r.het_job_id == job_id]
        return len(recs) == 2 and all(r.state.is_finished for r in recs)

    wait_until(finished, 120, interval=1)
    recs = [r for r in client.accounting(job_ids=[job_id]) if r.het_job_id == job_id]
    by_offset = {r.het_job_offset: r for r in recs}
    assert {o: (r.user, r.account, r.state) for o, r in by_offset.items()} == {
        0: ("alice", "nlp", JobState.COMPLETED),
        1: ("alice", "nlp", JobState.COMPLETED),
    }
    assert by_offset[1].tres_alloc["gres/shard"] == 16  # two workers, a quarter card each
    output = Path(lab.cfg.root) / "portal" / "users" / "alice" / f"pt-ps-{job_id}.out"
    try:
        out = output.read_text()
        assert re.search(r"HUB ps0@cpu1 at \S+ saw worker0@gpu\d worker1@gpu\d", out), out
        assert len(re.findall(r"PEER worker\d@gpu\d got 'ack from ps0@cpu1'", out)) == 2, out
    finally:
        output.unlink(missing_ok=True)
        shutil.rmtree(shared, ignore_errors=True)


def test_a_job_from_history_runs_again_as_its_owner(portal: Portal, client: SlurmClient) -> None:
    first = _submit(portal, "alice", "nlp", shards=1, partition="gpu", script=SLEEP)
    wait_job(client, first, lambda j: True, 10)
    history = portal.api("alice").get("/api/v1/jobs/history").json
    assert first in [h["job_id"] for h in history]
    # someone else may not re-run alice's job
    assert portal.api(SUBMITTER).post(f"/api/v1/jobs/{first}/rerun").status_code in {403, 404}
    # nor run it again while Slurm still has it queued or running
    original = wait_job(client, first, lambda j: True, 10)
    assert portal.api("alice").post(f"/api/v1/jobs/{first}/rerun").status_code == 409
    client.cancel([first])
    wait_job(client, first, lambda j: not j.state.is_active, 60)
    r = portal.api("alice").post(f"/api/v1/jobs/{first}/rerun")
    assert r.status_code == 201, r.json
    again = int(r.json["job_id"])
    job = wait_job(client, again, lambda j: True, 10)
    assert again != first
    assert (job.user, job.account, job.partition) == ("alice", "nlp", "gpu")
    assert job.gres_request == original.gres_request
    client.cancel([first, again])


def test_the_clusters_view_reads_the_lab(portal: Portal, client: SlurmClient, lab: Lab) -> None:
    assert portal.api("alice").get("/api/v1/clusters").status_code == 403
    r = portal.api("pt-admin").get("/api/v1/clusters")
    assert r.status_code == 200, r.json
    (mine,) = [c for c in r.json if c["name"] == lab.cfg.cluster]
    assert mine["reachable"] is True
    nodes = client.nodes()
    assert mine["nodes"] == len(nodes)
    assert mine["gpus"]["total"] == sum(n.gres_total("gpu") for n in nodes)
    assert mine["cpus"]["total"] == sum(n.cpus for n in nodes)


def test_a_quota_set_in_the_portal_is_enforced_by_slurm(
    portal: Portal, client: SlurmClient
) -> None:
    _remove_test_accounts(client)
    try:
        r = portal.api("pt-admin").put(
            f"/api/v1/domains/{portal.ids['dom']}/quota", json={"shards": 8}
        )
        assert r.status_code == 200, r.json
        dry = portal.api("pt-dadmin").put(
            f"/api/v1/projects/{portal.ids['proj']}/quota?dry_run=true", json={"shards": 4}
        )
        assert dry.status_code == 200, dry.json
        assert dry.json["slurm"]["applied"] is False
        assert any("GrpTRES=gres/shard=4" in c for c in dry.json["slurm"]["commands"])
        # the domain admin alone: saved, and Slurm enforces it at once (no platform sync)
        r = portal.api("pt-dadmin").put(
            f"/api/v1/projects/{portal.ids['proj']}/quota", json={"shards": 4}
        )
        assert r.status_code == 200, r.json
        assert r.json["slurm"]["applied"] is True
        assert any("GrpTRES=gres/shard=4" in c for c in r.json["slurm"]["commands"])
        # nothing is left for the platform-wide sync to do for this tenant
        preview = portal.api("pt-admin").get("/api/v1/slurm/sync").json
        assert not any(PROJECT in c or DOMAIN in c for c in preview["commands"])
        # the lab's own tenants already match: the preview leaves them alone
        assert not any(" nlp" in c or "=nlp" in c or "alice" in c for c in preview["commands"])

        assocs = client.associations()
        account = next(a for a in assocs if a.account == PROJECT and not a.user)
        assert account.parent == DOMAIN
        assert dict(account.grp_tres.counts) == {"gres/shard": 4}
        assert any(a.user == SUBMITTER and a.account == PROJECT for a in assocs)

        # over the quota on its own: refused by the portal before Slurm
        r = portal.api(SUBMITTER).post(
            "/api/v1/jobs",
            json={
                "project_id": portal.ids["proj"],
                "name": "pt-big",
                "time_limit": 2,
                "script": "#!/bin/bash\nsleep 1\n",
                "shards": 5,
            },
        )
        assert r.status_code == 409
        # within it one by one, over it together: Slurm holds the second back
        long = "#!/bin/bash\nsleep 120\n"
        first = _submit(portal, SUBMITTER, "proj", shards=4, partition="gpu", script=long)
        wait_job(client, first, lambda j: j.is_running, 60)
        second = _submit(portal, SUBMITTER, "proj", shards=4, partition="gpu", script=long)
        job = wait_job(client, second, lambda j: j.reason == "AssocGrpGRES", 30)
        assert job.is_pending
        shown = portal.api(SUBMITTER).get(f"/api/v1/jobs/{second}").json
        assert (shown["state"], shown["reason"]) == ("PENDING", "AssocGrpGRES")
        for job_id in (second, first):
            assert portal.api(SUBMITTER).delete(f"/api/v1/jobs/{job_id}").status_code == 200
        wait_until(lambda: not {first, second} & {j.job_id for j in client.jobs()}, 30)
    finally:
        _remove_test_accounts(client)
    assert not any(a.account in {PROJECT, DOMAIN} for a in client.associations())


MANY = 1000


def _portal_queue(portal: Portal, user: str) -> tuple[dict[int, tuple[str, str]], int]:
    """Every page of the queue as the platform admin sees it: job -> (state, reason)."""
    api, seen, page, total = portal.api("pt-admin"), {}, 1, -1
    while True:
        r = api.get(f"/api/v1/jobs?user={user}&page_size=100&page={page}")
        assert r.status_code == 200, r.json
        header = json.loads(r.headers["X-Pagination"])
        total = header["total"]
        for j in r.json:
            assert j["job_id"] not in seen, "a job on two pages"
            seen[j["job_id"]] = (j["state"], j["reason"])
        if page >= header["total_pages"]:
            return seen, total
        page += 1


def test_a_thousand_queued_jobs_are_shown_with_their_states(
    portal: Portal, client: SlurmClient
) -> None:
    """1,000 jobs in the queue at once (held, a few released to run): the API's pages hold
    each exactly once with Slurm's own state and reason, and the queue page pages them.
    The ``client`` fixture cancels them all at the end."""
    options = ["--partition=cpu", "--time=5", "--hold", "--job-name=pt-many", "--mem=16M"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = set(pool.map(lambda _: client.submit(SLEEP, options), range(MANY)))
    assert len(ids) == MANY
    released = sorted(ids)[:4]
    client.release(released)
    wanted = {j.job_id for j in client.jobs() if j.user == SUBMITTER}
    assert ids <= wanted

    def agrees() -> bool:
        shown, total = _portal_queue(portal, SUBMITTER)
        truth = {j.job_id: (j.state.value, j.reason) for j in client.jobs() if j.job_id in ids}
        return total == len(shown) and {k: shown.get(k) for k in ids} == truth

    wait_until(agrees, 60, interval=1)
    shown, _ = _portal_queue(portal, SUBMITTER)
    held = ids - set(released)
    assert {shown[j] for j in held} == {("PENDING", "JobHeldUser")}
    assert all(shown[j][1] != "JobHeldUser" for j in released)
    # the queue page, 50 a page, newest first: ours are the newest jobs
    browser = portal.app.test_client()
    browser.environ_base["HTTP_ACCEPT_LANGUAGE"] = "en"
    form = browser.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form)
    assert token is not None
    login = {"username": "pt-admin", "password": PASSWORD, "csrf_token": token.group(1)}
    assert browser.post("/login", data=login).status_code == 302
    html = browser.get("/jobs?page=2").get_data(as_text=True)
    listed = [int(x) for x in re.findall(r'href="/jobs/(\d+)"', html)]
    assert listed == sorted(ids, reverse=True)[50:100]
    assert re.search(r"page 2 of (\d+)", html) is not None


def test_the_hooks_refusal_reaches_the_user_word_for_word(portal: Portal, lab: Lab) -> None:
    """sbatch prints the admission hook's message; slurmrestd says "Unspecified error". The
    portal shows the user what sbatch would have: the hook's own words."""
    job = {"gpus": 3, "nodes": 3, "partition": "gpu"}  # 9 cards: over nlp's 8 per job
    body = {"project_id": portal.ids["nlp"], "name": "pt-too-big", "time_limit": 2, **job}
    r = portal.api("alice").post("/api/v1/jobs", json={**body, "script": "#!/bin/bash\ntrue\n"})
    assert r.status_code == 409, r.json
    argv = ["runuser", "-u", "alice", "--", "sbatch", "-A", "nlp", "-p", "gpu", "-N", "3"]
    argv += ["--gres=gpu:3", "-t", "2", "--wrap", "true"]
    done = subprocess.run(
        argv, env={**os.environ, **lab.cfg.env()}, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    said = done.stderr.strip().splitlines()[0].removeprefix("sbatch: error: ")
    assert "may use at most 8 per job" in said
    assert r.json["message"] == f"Slurm refused the job: {said}"


def test_the_hooks_refusal_speaks_the_submitters_language(portal: Portal, lab: Lab) -> None:
    """The hook in slurmctld reads the language sbatch passes from the user's shell (LANG),
    and the one the portal names for its reader (AIPOOL_LANG): a Chinese reader is refused in
    Chinese on both ways in, in the same words."""
    job = {"gpus": 3, "nodes": 3, "partition": "gpu"}  # 9 cards: over nlp's 8 per job
    body = {"project_id": portal.ids["nlp"], "name": "pt-too-big", "time_limit": 2, **job}
    api = portal.api("alice")
    api.environ_base["HTTP_ACCEPT_LANGUAGE"] = "zh-CN"
    r = api.post("/api/v1/jobs", json={**body, "script": "#!/bin/bash\ntrue\n"})
    assert r.status_code == 409, r.json
    argv = ["runuser", "-u", "alice", "--", "sbatch", "-A", "nlp", "-p", "gpu", "-N", "3"]
    argv += ["--gres=gpu:3", "-t", "2", "--wrap", "true"]
    said = {}
    for lang in ("zh_CN.UTF-8", "en_US.UTF-8"):
        env = {**os.environ, **lab.cfg.env(), "LANG": lang, "LC_ALL": "", "LC_MESSAGES": ""}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        assert done.returncode != 0
        said[lang] = done.stderr.strip().splitlines()[0].removeprefix("sbatch: error: ")
    assert "该作业共申请 9 张 GPU 卡；租户 nlp 每个作业最多可用 8 张" in said["zh_CN.UTF-8"]
    assert "may use at most 8 per job" in said["en_US.UTF-8"]
    assert r.json["message"] == f"Slurm 拒绝了该作业：{said['zh_CN.UTF-8']}"
