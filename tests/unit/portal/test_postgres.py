"""The portal on PostgreSQL: migrations up and down, and the main flows, on a throwaway
cluster that this module starts (Debian's ``postgresql`` package; ``apt-get install -y
postgresql``) and stops again."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from flask import Flask
from flask_migrate import downgrade, upgrade
from sqlalchemy import inspect

from portal import create_app
from portal.extensions import db
from tests.unit.portal.conftest import BASE, Env
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.world import seed_world


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        pytest.fail("PostgreSQL is not installed: apt-get install -y postgresql")
    return found[-1]


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A PostgreSQL server of our own on a free port, as the ``postgres`` system user
    (PostgreSQL refuses to run as root), with trust auth on 127.0.0.1 only."""
    root = Path(tempfile.mkdtemp(prefix="aipool-pg-"))
    shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    as_pg = {"user": "postgres", "group": "postgres", "extra_groups": [], "cwd": root}
    subprocess.run(
        [_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        timeout=120,
        **as_pg,
    )
    server = subprocess.Popen(
        [
            _bin("postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-h",
            "127.0.0.1",
            "-k",
            str(root),
            "-c",
            "fsync=off",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **as_pg,
    )
    try:
        admin = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute("CREATE DATABASE portal")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/portal"
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_app(pg_url: str) -> Iterator[Flask]:
    app = create_app({**BASE, "DATABASE_URL": pg_url, "SLURM": FakeSlurm()})
    yield app
    with app.app_context():
        db.engine.dispose()


def test_migrations_go_up_and_down(pg_app: Flask) -> None:
    with pg_app.app_context():
        upgrade()
        assert "memberships" in inspect(db.engine).get_table_names()
        downgrade(revision="base")
        assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
        upgrade()


def test_main_flows_on_postgres(pg_app: Flask, tmp_path: Path) -> None:
    with pg_app.app_context():
        world = seed_world()
    slurm = FakeSlurm()
    pg_app.config["SLURM"] = slurm
    pg_app.extensions["aipool.slurm"] = slurm
    env = Env(pg_app, world, slurm)
    assert {p["name"] for p in env.api("erin").get("/api/v1/projects").json} == {"nlp", "vision"}
    nlp, vision = world.projects["nlp"], world.projects["vision"]
    assert env.api("alice").get(f"/api/v1/projects/{vision}").status_code == 404
    r = env.api("erin").post(
        "/api/v1/projects", json={"domain_id": world.domains["research"], "name": "Bad!"}
    )
    assert r.status_code == 422
    r = env.api("erin").put(f"/api/v1/projects/{nlp}/quota", json={"gpus": 2, "shards": 16})
    assert r.status_code == 200
    events = env.api("admin").get("/api/v1/audit?action=quota.project").json
    assert events[0]["after"]["shards"] == 16
    sync = env.api("admin").get("/api/v1/slurm/sync").json
    assert "alice@nlp" in sync["users"]
    job = env.api("alice").post(
        "/api/v1/jobs",
        json={
            "project_id": nlp,
            "name": "pg",
            "time_limit": 5,
            "script": "#!/bin/bash\ntrue\n",
            "shards": 8,
        },
    )
    assert job.status_code == 201
    assert os.path.isdir(Path(pg_app.instance_path) / "users" / "alice")  # the job's own dir
    # the job history on PostgreSQL: a reader's page (the OR of own and readable projects),
    # its count per branch, and a re-run as the owner
    job_id = job.json["job_id"]
    seen = env.api("erin").get("/api/v1/jobs/history")
    assert [r["job_id"] for r in seen.json] == [job_id]
    assert '"total": 1' in seen.headers["X-Pagination"]
    rerun = env.api("alice").post(f"/api/v1/jobs/{job_id}/rerun")
    assert rerun.status_code == 201, rerun.json
    rows = env.api("gina").get("/api/v1/jobs/history").json
    assert [(r["job_id"], r["rerun_of"]) for r in rows] == [
        (rerun.json["job_id"], job_id),
        (job_id, None),
    ]
