"""Portal page times with a large queue: p50/p95 per page for a member and the platform admin.

The queue (``--jobs``, default 100,000 active jobs spread over the demo projects) and 64 GPU
nodes come from an in-memory Slurm stand-in, so this measures the portal's own work (queries,
filtering by permission, rendering), not squeue. Baseline: the login page, measured in the
same run; the ratio shows what the data costs on top. Target (DESIGN §5): p95 < 300 ms.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from flask_migrate import upgrade

from portal import create_app
from portal.demo import DEMO_USERS, seed
from portal.extensions import db
from slurm_plugins.client.models import Gres, Job, JobState, Node, NodeState, Tres
from slurm_plugins.client.specs import AccountSpec, UserSpec

ACCOUNTS = ("nlp", "vision", "cs101")
USERS = {"nlp": "alice", "vision": "bob", "cs101": "carol"}


class BigCluster:
    """Just enough of the portal's Slurm port for reads."""

    def __init__(self, n_jobs: int, n_nodes: int = 64) -> None:
        self._jobs = [
            Job(
                job_id=i,
                name=f"job{i}",
                user=USERS[ACCOUNTS[i % 3]],
                account=ACCOUNTS[i % 3],
                partition="gpu",
                qos="normal",
                state=JobState.RUNNING if i % 10 == 0 else JobState.PENDING,
                reason="" if i % 10 == 0 else "Priority",
                tres_req=Tres({"gres/shard": 8}),
            )
            for i in range(1, n_jobs + 1)
        ]
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
        return self._jobs

    def job(self, job_id: int) -> Job | None:
        return self._jobs[job_id - 1] if 0 < job_id <= len(self._jobs) else None

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


def _login(app: Flask, user: str, password: str) -> FlaskClient:
    client = app.test_client()
    r = client.post("/api/v1/auth/token", json={"username": user, "password": password})
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {r.json['token']}"  # type: ignore[index]
    return client


def _measure(client: FlaskClient, path: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = client.get(path)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, (path, r.status_code)
    return times


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="aipool-bench-portal-"))
    app = create_app(
        {
            "SECRET_KEY": "bench",
            "DATABASE_URL": f"sqlite:///{tmp}/portal.db",
            "SLURM": BigCluster(args.jobs),
            "LOGIN_RATE_LIMIT": "1000 per minute",
        }
    )
    password = "bench password"  # noqa: S105 - a throwaway database
    with app.app_context():
        upgrade()
        seed(db.session, dict.fromkeys(DEMO_USERS, password))
    anonymous = app.test_client()
    base = _measure(anonymous, "/login", args.runs)
    print(f"{args.jobs} active jobs, {args.runs} runs per page")
    print(f"{'page':34} {'who':6} {'p50 ms':>8} {'p95 ms':>8} {'p95/login':>10}")
    print(
        f"{'/login (baseline)':34} {'-':6} {statistics.median(base) * 1e3:8.1f} "
        f"{p95(base) * 1e3:8.1f} {1:10.1f}"
    )
    pages = [
        "/",
        "/jobs",
        "/jobs?page=100",
        "/api/v1/jobs?page_size=50",
        "/projects",
        "/quotas",
        "/nodes",
        "/api/v1/cluster",
    ]
    for who in ("alice", "admin"):
        client = _login(app, who, password)
        for path in [*pages, *(["/audit"] if who == "admin" else [])]:
            xs = _measure(client, path, args.runs)
            print(
                f"{path:34} {who:6} {statistics.median(xs) * 1e3:8.1f} {p95(xs) * 1e3:8.1f} "
                f"{p95(xs) / p95(base):10.1f}"
            )


if __name__ == "__main__":
    main()
