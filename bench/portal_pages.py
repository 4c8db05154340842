"""Portal page and API latency with a big database and a big queue: p50/p95 per page.

The database holds ``--users`` users (default 10,000) spread over ``--projects`` projects,
``--jobs`` portal submissions (default 100,000: the job history, with one audit event each)
and ``--usage-jobs`` metered jobs of the accounting tables (default 1,000,000, ingested with
their hourly/daily/monthly rollups by ``bench/accounting_ingest.py``'s generator); the Slurm
queue (the same number of active jobs as ``--jobs``) and 64 GPU nodes come from an in-memory
stand-in, so this measures the portal's own work (queries, permission filtering, rendering),
not squeue. Every request goes through the full WSGI stack of the Flask test client.

Baseline: a bare static file (``/static/portal.css``), measured in the same run; the ratio
``p95/static`` shows what each page costs on top of the request plumbing. Target (issue 6):
p95 < 300 ms for every page and API call. The Slurm sync preview is listed apart: it renders
one association per member (15,000 here) and grows with the users, a bulk operation rather
than a page. ``--profile FILE`` writes a pyinstrument profile (HTML) of the slowest page.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, insert, select

from accounting.models import UsageRecord
from portal import create_app
from portal.audit.models import AuditEvent
from portal.database import upgrade
from portal.demo import DEMO_USERS, seed
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import hash_password
from portal.jobs.models import JobRecord
from portal.roles.models import Role
from portal.tenancy.models import Domain, DomainAdmin, Membership, Project
from portal.web import session
from slurm_plugins.client.models import Gres, Job, JobState, Node, NodeState, Tres
from slurm_plugins.client.specs import AccountSpec, UserSpec

TARGET_MS = 300.0
BULK = {"/api/v1/slurm/sync"}
COUNTED = (User, Project, JobRecord, AuditEvent, UsageRecord)
PASSWORD = "bench password"  # noqa: S105 - a throwaway database


class BigCluster:
    """Just enough of the portal's Slurm port for reads: a queue and 64 nodes in memory."""

    def __init__(self, jobs: list[Job], n_nodes: int = 64) -> None:
        self._jobs = jobs
        self._by_id = {j.job_id: j for j in jobs}
        self._nodes = [
            Node(
                name=f"gpu{i}",
                state=NodeState.MIXED,
                cpus=64,
                alloc_cpus=32,
                real_memory=512000,
                alloc_memory=1000,
                partitions=("gpu",),
                gres=(Gres("gpu", "a100", 8), Gres("shard", "a100", 256)),
                tres_used=Tres({"gres/gpu": 4, "gres/shard": 64}),
            )
            for i in range(n_nodes)
        ]

    def jobs(self) -> list[Job]:
        return self._jobs  # one snapshot, as the real port shares it for SLURM_CACHE_SECONDS

    def job(self, job_id: int) -> Job | None:
        return self._by_id.get(job_id)

    def jobs_by_id(self, job_ids: Sequence[int]) -> list[Job]:
        return [self._by_id[i] for i in job_ids if i in self._by_id]

    def nodes(self) -> list[Node]:
        return self._nodes

    def associations(self) -> list[Any]:
        return []

    def preview(self, accounts: Sequence[AccountSpec], users: Sequence[UserSpec]) -> list[str]:
        return []

    apply = preview

    def submit_as(self, user: str, script: str, props: Mapping[str, Any]) -> int:
        raise NotImplementedError

    def cancel_as(self, user: str, job_id: int) -> None:
        raise NotImplementedError

    def cancel(self, job_id: int) -> None:
        raise NotImplementedError


def populate(n_users: int, n_projects: int, n_jobs: int, rng: random.Random) -> None:
    """Bulk rows beside the demo tenants."""
    s = session()
    seed(s, dict.fromkeys(DEMO_USERS, PASSWORD))
    domains = {d.name: d for d in s.scalars(select(Domain))}
    role = {r.name: r.id for r in s.scalars(select(Role))}
    one_hash = hash_password(PASSWORD)
    now = datetime.now(UTC)
    s.execute(
        insert(User),
        [
            {"username": f"u{i:05d}", "display_name": f"User {i}", "password_hash": one_hash}
            for i in range(n_users - len(DEMO_USERS))
        ],
    )
    s.execute(
        insert(Project),
        [
            {
                "name": f"p{i:04d}",
                "domain_id": domains["research" if i % 2 else "teaching"].id,
                "description": f"project {i}",
                "qos": "normal,low",
            }
            for i in range(n_projects - 3)
        ],
    )
    s.add(User(username="erin", password_hash=one_hash))
    s.flush()
    erin = s.scalar(select(User.id).where(User.username == "erin"))
    s.add(DomainAdmin(domain_id=domains["research"].id, user_id=erin))
    users = list(s.execute(select(User.id, User.username)))
    projects = list(s.execute(select(Project.id, Project.name, Project.domain_id)))
    members: set[tuple[int, int]] = {
        (pid, uid) for pid, uid in s.execute(select(Membership.project_id, Membership.user_id))
    }
    rows = []
    for uid, _ in users:  # every user in one or two projects
        for pid, _name, _dom in rng.sample(projects, rng.choice((1, 2))):
            if (pid, uid) not in members:
                members.add((pid, uid))
                rows.append({"project_id": pid, "user_id": uid, "role_id": role["member"]})
    s.execute(insert(Membership), rows)
    by_project: dict[int, list[tuple[int, str]]] = {}
    names = dict(users)
    for pid, uid in members:
        by_project.setdefault(pid, []).append((uid, names[uid]))
    project_of = {pid: (name, dom) for pid, name, dom in projects}
    owners = sorted(members)
    history, audit = [], []
    for i in range(1, n_jobs + 1):
        pid, uid = owners[rng.randrange(len(owners))]
        account, domain_id = project_of[pid]
        at = now - timedelta(seconds=n_jobs - i)
        request = {"name": f"job{i}", "time_limit": 60, "script": "#!/bin/bash\nsleep 60\n"}
        history.append(
            {
                "job_id": i,
                "user_id": uid,
                "project_id": pid,
                "kind": "form",
                "name": f"job{i}",
                "request": request,
                "submitted_at": at,
            }
        )
        audit.append(
            {
                "at": at,
                "actor_id": uid,
                "actor": names[uid],
                "action": "job.submit",
                "target_type": "job",
                "target_id": str(i),
                "domain_id": domain_id,
                "after": {"name": f"job{i}", "account": account},
            }
        )
    for start in range(0, n_jobs, 20_000):
        s.execute(insert(JobRecord), history[start : start + 20_000])
        s.execute(insert(AuditEvent), audit[start : start + 20_000])
    s.commit()


def queue_of_history() -> list[Job]:
    """The queue the stand-in serves: every job of the history, still active."""
    rows = db.session.execute(
        select(JobRecord.job_id, User.username, Project.name)
        .join(User, User.id == JobRecord.user_id)
        .join(Project, Project.id == JobRecord.project_id)
        .order_by(JobRecord.job_id)
    )
    return [
        Job(
            job_id=i,
            name=f"job{i}",
            user=user,
            account=account,
            partition="gpu",
            qos="normal",
            state=JobState.RUNNING if i % 10 == 0 else JobState.PENDING,
            reason="" if i % 10 == 0 else "Priority",
            tres_req=Tres({"gres/shard": 8}),
        )
        for i, user, account in rows
    ]


def _login(app: Flask, user: str) -> FlaskClient:
    client = app.test_client()
    r = client.post("/api/v1/auth/token", json={"username": user, "password": PASSWORD})
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {r.json['token']}"  # type: ignore[index]
    return client


def _measure(client: FlaskClient, path: str, runs: int) -> list[float]:
    client.get(path)  # warm: templates compiled, caches filled, as in a running portal
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = client.get(path)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, (path, r.status_code)
    return times


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def pages_of(app: Flask) -> dict[str, list[str]]:
    with app.app_context():
        s = db.session
        alice = s.scalar(select(User.id).where(User.username == "alice"))
        own = s.scalar(select(JobRecord.job_id).where(JobRecord.user_id == alice).limit(1))
        nlp = s.scalar(select(Project.id).where(Project.name == "nlp"))
    common = [
        "/",
        "/jobs",
        "/jobs?page=100",
        f"/jobs/{own}",
        "/jobs/history",
        "/jobs/history?page=20",
        "/projects",
        f"/projects/{nlp}",
        "/quotas",
        "/nodes",
        "/api/v1/jobs?page_size=50",
        "/api/v1/jobs?page=20&page_size=50",
        f"/api/v1/jobs/{own}",
        f"/api/v1/jobs/{own}/metrics",
        "/api/v1/jobs/history?page_size=50",
        "/api/v1/projects?page_size=50",
        "/api/v1/cluster",
        "/api/v1/auth/me",
        "/usage",
        "/api/v1/usage",
    ]
    admin_only = [
        "/audit",
        "/api/v1/audit?page_size=50",
        "/api/v1/audit?page=100&page_size=50",
        "/api/v1/users?page_size=50",
        "/api/v1/users?page=100&page_size=50",
        "/domains",
        "/groups",
        "/api/v1/slurm/sync",
    ]
    return {
        "alice": common,
        "erin": [*common, *admin_only[:3], "/domains"],
        "admin": [
            *common,
            *admin_only,
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--projects", type=int, default=200)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--usage-jobs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", type=Path, default=None, help="pyinstrument HTML output")
    ap.add_argument(
        "--db", type=Path, default=None, help="keep the database here; reused when it exists"
    )
    args = ap.parse_args()
    path = args.db or Path(tempfile.mkdtemp(prefix="aipool-bench-portal-")) / "portal.db"
    reuse = path.exists()
    app = create_app(
        {
            "SECRET_KEY": "bench",
            "DATABASE_URL": f"sqlite:///{path}",
            "LOGIN_RATE_LIMIT": "1000 per minute",
        }
    )
    t0 = time.perf_counter()
    with app.app_context():
        upgrade()
        if not reuse:
            populate(args.users, args.projects, args.jobs, random.Random(args.seed))  # noqa: S311
            if args.usage_jobs:
                # bench/accounting_ingest.py, beside: its sacct --json files, ingested
                from accounting_ingest import run_ingest, write_documents

                sacct = path.parent / "sacct"
                run_ingest(db.engine, write_documents(sacct, args.usage_jobs), os.cpu_count() or 1)
                shutil.rmtree(sacct, ignore_errors=True)
        s = db.session
        counts = [s.scalar(select(func.count()).select_from(t)) for t in COUNTED]
        queue = queue_of_history()
    app.config["SLURM"] = BigCluster(queue)
    print(
        f"database {path}{' (reused)' if reuse else ''}: "
        + ", ".join(f"{n} {t.__tablename__}" for n, t in zip(counts, COUNTED, strict=True))
        + f"; queue: {len(queue)} active jobs (ready in {time.perf_counter() - t0:.0f} s)"
    )
    base = _measure(app.test_client(), "/static/portal.css", args.runs)
    login = _measure(app.test_client(), "/login", args.runs)
    print(f"{args.runs} runs per page\n")
    print(f"{'page':40} {'who':6} {'p50 ms':>8} {'p95 ms':>8} {'p95/static':>11}")
    rows = [("/static/portal.css (baseline)", "-", base), ("/login", "-", login)]
    for who, paths in pages_of(app).items():
        client = _login(app, who)
        rows += [(path, who, _measure(client, path, args.runs)) for path in paths]
    bulk = [r for r in rows if r[0] in BULK]
    pages = [r for r in rows if r[0] not in BULK]
    for path, who, xs in pages:
        print(
            f"{path:40} {who:6} {statistics.median(xs) * 1e3:8.1f} {p95(xs) * 1e3:8.1f} "
            f"{p95(xs) / p95(base):11.1f}"
        )
    print("bulk operations (grow with the users):")
    for path, who, xs in bulk:
        print(
            f"{path:40} {who:6} {statistics.median(xs) * 1e3:8.1f} {p95(xs) * 1e3:8.1f} "
            f"{p95(xs) / p95(base):11.1f}"
        )
    path, who, worst_xs = max(pages, key=lambda r: p95(r[2]))
    worst = p95(worst_xs)
    verdict = "meets" if worst * 1e3 < TARGET_MS else "MISSES"
    print(
        f"\nworst page p95 {worst * 1e3:.1f} ms ({path}, {who}): "
        f"{verdict} the {TARGET_MS:.0f} ms target"
    )
    if args.profile:
        profile(app, who, path, args.profile)


def profile(app: Flask, who: str, path: str, out: Path) -> None:
    """A pyinstrument profile of ten requests of one page, as HTML."""
    from pyinstrument import Profiler

    client = _login(app, who)
    profiler = Profiler(interval=0.001)
    with profiler:
        for _ in range(10):
            client.get(path)
    out.write_text(profiler.output_html())
    print(f"profile of {path} ({who}): {out}")


if __name__ == "__main__":
    main()
