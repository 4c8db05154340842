"""What the portal adds to a call of an inference service: p50/p95 of ``POST /predict``
through the portal (token check, allow-list, the replica the reconciler found ready, proxy
by httpx, call counter) against the same call sent straight to the replica, measured in the
same run.

The replica is the real preset server (``python -m portal.presets.runtime serve``) for the
digits classifier, in a process of its own; Slurm is a stand-in that reports the replica's
job as running, so the figure is the portal's own overhead, not squeue's.

    python bench/models_proxy.py [--calls 300] [--user alice]

The service belongs to a user with a Unix account on this host (the portal runs its model
work as that user): the lab's demo user ``alice`` unless ``--user`` names another.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
from flask_migrate import upgrade
from sklearn.datasets import load_digits

from portal import create_app
from portal.authz import load_access
from portal.control.daemon import Daemon
from portal.identity.models import User
from portal.identity.service import hash_password
from portal.inference import service as inference
from portal.inference.models import InferenceService
from portal.presets import runtime
from portal.registry import service as registry
from portal.roles.service import role_by_name
from portal.slurm import SlurmPort
from portal.tenancy.models import Domain, Membership, Project
from portal.web import session
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.models import Job, JobState, Node, NodeState


class RunningJobs:
    """Slurm as far as a running service needs it: submitted jobs are running."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.next = 100
        self.names: dict[int, str] = {}

    def submit_as(self, user: str, script: str, job: JobRequest) -> int:
        self.next += 1
        self.names[self.next] = job.name or "svc"
        return self.next

    def job(self, job_id: int) -> Job:
        return Job(
            job_id=job_id,
            name=self.names.get(job_id, "svc"),
            user=self.user,
            account="bench",
            partition="cpu",
            qos="normal",
            state=JobState.RUNNING,
            nodes="node1",
        )

    def jobs(self) -> list[Job]:
        return []

    def nodes(self) -> list[Node]:
        return [Node(name="node1", state=NodeState.IDLE, address="127.0.0.1")]

    def cancel_as(self, user: str, job_id: int) -> None: ...


def _times(call: Callable[[], int], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        assert call() == 200
        out.append((time.perf_counter() - start) * 1000)
    return out


def _stats(ms: list[float]) -> tuple[float, float]:
    return statistics.median(ms), statistics.quantiles(ms, n=20)[-1]


def _deploy(tmp: Path, username: str) -> tuple[Any, int, str, Path, str, int]:
    """A portal with a trained digits classifier deployed: (app, service, token, workdir,
    replica key, replica job)."""
    port = RunningJobs(username)
    app = create_app(
        {
            "SECRET_KEY": "bench",
            "DATABASE_URL": f"sqlite:///{tmp}/portal.db",
            "SLURM": port,
            "MODEL_STORAGE": str(tmp / "store"),
            "MODEL_WORK": str(tmp / "work"),
            "JOB_WORKDIR": str(tmp),
        }
    )
    kind = runtime._kind(argparse.Namespace(preset="digits-classifier", mirror=None))
    runtime.train(kind, tmp / "base", tmp / "trained")
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(tmp / "trained" / "model", arcname=".")
    with app.test_request_context():
        upgrade()
        s = session()
        user = User(username=username, password_hash=hash_password("bench password"))
        project = Project(name="bench", domain=Domain(name="benchd"), qos="normal")
        s.add_all([user, project])
        s.flush()
        s.add(
            Membership(project_id=project.id, user_id=user.id, role_id=role_by_name(s, "member").id)
        )
        s.commit()
        access = load_access(s, user)
        v1 = registry.import_preset(
            s, access, {"preset": "digits-classifier", "project_id": project.id}
        )
        archive.seek(0)
        v2 = registry.upload_version(
            s,
            access,
            v1.model_id,
            stream=archive,
            filename="m.tar.gz",
            data={},
            port=cast(SlurmPort, port),  # what an upload asks of Slurm: RunningJobs has it
        )
        svc, token = inference.create(s, access, {"version_id": v2.id})
        service_id, workdir, key = svc.id, Path(svc.workdir), inference.replica_key(svc.id)
    Daemon(app).run_pass()  # the reconciler submits the replica
    with app.app_context():
        job_id = _service(service_id).replica_rows[0].job_id
    return app, service_id, token, workdir, key, int(job_id or 0)


def _service(service_id: int) -> InferenceService:
    svc = session().get(InferenceService, service_id)
    assert svc is not None, "the service just made"
    return svc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--user", default="alice", help="a Unix account of this host")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="aipool-bench-models-"))
    tmp.chmod(0o755)  # the user's run directories lie below
    app, service_id, token, workdir, key, job_id = _deploy(tmp, args.user)
    conn = workdir / "replica-0.json"
    if os.geteuid() == 0:
        # a root portal stages the model with root's rights; the site's portal, through its
        # root helper, as the user: the replica below runs as the user, as its job would
        for path in (workdir / "model", *(workdir / "model").rglob("*")):
            shutil.chown(path, args.user)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "portal.presets.runtime",
            "serve",
            "--preset",
            "digits-classifier",
            "--model",
            str(workdir / "model"),
            "--conn",
            str(conn),
            "--host",
            "127.0.0.1",
        ],
        # as its user, on a port of the range the portal proxies to, as a replica job would
        env={
            **os.environ,
            "SERVE_KEY": key,
            "SLURM_JOB_ID": str(job_id),
            "SERVE_PORTS": app.config["PROXY_PORT_RANGE"],
        },
        user=args.user if os.geteuid() == 0 else None,
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "replica.err").open("w"),
    )
    try:
        deadline = time.monotonic() + 60
        while not conn.is_file():
            if time.monotonic() > deadline or server.poll() is not None:
                err = (tmp / "replica.err").read_text()[-2000:]
                raise SystemExit(f"the replica did not start:\n{err}")
            time.sleep(0.05)
        Daemon(app).run_pass()  # the reconciler reads the replica's address
        portal = app.test_client()
        body = {"pixels": load_digits().data[0].tolist()}
        url = f"/api/v1/inference/{service_id}/predict"
        headers = {"X-Service-Token": token}
        warm = portal.post(url, json=body, headers=headers)
        assert warm.status_code == 200, warm.get_data(as_text=True)
        with app.app_context():
            replica_url = _service(service_id).replica_rows[0].url
        direct_client = httpx.Client()

        def direct() -> int:
            r = direct_client.post(
                f"{replica_url}/predict", json=body, headers={"X-Replica-Key": key}
            )
            return r.status_code

        def proxied() -> int:
            return int(portal.post(url, json=body, headers=headers).status_code)

        _times(direct, 20)
        d50, d95 = _stats(_times(direct, args.calls))
        p50, p95 = _stats(_times(proxied, args.calls))
        print(f"{args.calls} calls each (digits-classifier replica on this host)")
        print(f"  direct to the replica   p50 {d50:6.2f} ms   p95 {d95:6.2f} ms")
        print(f"  through the portal      p50 {p50:6.2f} ms   p95 {p95:6.2f} ms")
        print(f"  ratio portal/direct     p50 {p50 / d50:6.2f}x    p95 {p95 / d95:6.2f}x")
        print(f"  portal overhead         p50 {p50 - d50:6.2f} ms")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
