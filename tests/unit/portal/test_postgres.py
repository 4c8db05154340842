"""The portal on PostgreSQL: migrations up and down, and the main flows, on a throwaway
server (:mod:`tests.unit.postgres`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask_migrate import downgrade
from sqlalchemy import inspect

from accounting import migrate as accounting_migrate
from portal import create_app
from portal.database import upgrade
from portal.extensions import db
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import BASE, Env
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.world import seed_world
from tests.unit.postgres import pg_url  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def pg_app(pg_url: str) -> Iterator[Flask]:  # noqa: F811
    app = create_app({**BASE, "DATABASE_URL": pg_url, "SLURM": FakeSlurm()})
    yield app
    with app.app_context():
        db.engine.dispose()


def test_migrations_go_up_and_down(pg_app: Flask) -> None:
    """Both histories up; each down on its own: the portal's leaves accounting's tables."""
    with pg_app.app_context():
        upgrade()
        tables = set(inspect(db.engine).get_table_names())
        assert {"memberships", "acct_usage", "acct_bills"} <= tables
        assert {"alembic_version", accounting_migrate.VERSION_TABLE} <= tables
        downgrade(revision="base")
        left = set(inspect(db.engine).get_table_names()) - {"alembic_version"}
        assert left == {t for t in tables if accounting_migrate.owns(t)}
        accounting_migrate.downgrade(db.engine, "base")
        assert set(inspect(db.engine).get_table_names()) <= {
            "alembic_version",
            accounting_migrate.VERSION_TABLE,
        }
        upgrade()
        assert accounting_migrate.drift(db.engine) == []


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
    env.slurm.set_state(job_id, JobState.COMPLETED)
    rerun = env.api("alice").post(f"/api/v1/jobs/{job_id}/rerun")
    assert rerun.status_code == 201, rerun.json
    rows = env.api("gina").get("/api/v1/jobs/history").json
    assert [(r["job_id"], r["rerun_of"]) for r in rows] == [
        (rerun.json["job_id"], job_id),
        (job_id, None),
    ]
