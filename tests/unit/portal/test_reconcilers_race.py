"""Two reconcilers at once — two threads, each with its own database session, as two daemons
would be — never submit one replica twice: on SQLite (the lab's database) and on PostgreSQL
(sites'). Without the runner lock they would: the last test shows the race is real."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from portal import create_app
from portal.control import daemon
from portal.control.daemon import Daemon
from portal.extensions import db
from slurm_plugins.client.job import JobRequest
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import BASE, Env
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.test_postgres import pg_url  # noqa: F401 -- fixture
from tests.unit.portal.test_registry import Clock, reg  # noqa: F401 -- fixture
from tests.unit.portal.test_registry_runs import import_digits, set_job
from tests.unit.portal.world import seed_world

pytestmark = pytest.mark.usefixtures("users_own_files")

SERVICES, REPLICAS, PASSES = 3, 2, 3


class SlowSlurm(FakeSlurm):
    """A submission takes a while, as through slurmrestd, so two passes overlap for sure."""

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()

    def submit_as(self, user: str, script: str, job: JobRequest) -> int:
        time.sleep(0.05)
        with self._guard:
            return super().submit_as(user, script, job)


def _services(env: Env) -> set[str]:
    """Services of two replicas each; the replica job names a pass must submit, once each."""
    model = import_digits(env)
    v1 = env.api("alice").get(f"/api/v1/models/{model}/versions").json[0]["id"]
    names = set()
    for i in range(SERVICES):
        body = {"version_id": v1, "name": f"race-{i}", "replicas": REPLICAS}
        r = env.api("alice").post("/api/v1/inference", json=body)
        assert r.status_code == 201, r.json
        names |= {f"svc-{r.json['id']}-r{k}-cpu" for k in range(REPLICAS)}
    return names


def _race(app: Flask) -> list[BaseException]:
    """Two daemons, each pass started at the same moment by both; what they raised."""
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        one = Daemon(app)
        try:
            for _ in range(PASSES):
                start.wait(timeout=30)
                one.run_pass(full=True)
        except BaseException as exc:  # reported by the test's own thread
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def _submitted(slurm: FakeSlurm) -> list[str]:
    return sorted(str(props["name"]) for _, _, props in slurm.submitted)


def _start_then_restart(env: Env, slurm: SlowSlurm) -> tuple[set[str], list[BaseException]]:
    """Race over new services (their first replicas), then over replicas whose jobs failed
    (due for a restart after the backoff); the replica job names, and what the racers raised."""
    wanted = _services(env)
    errors = _race(env.app)
    for job in slurm.jobs():  # every replica's job fails
        set_job(env, job.job_id, JobState.FAILED)
    Daemon(env.app).run_pass(full=True)  # records the failures: restarts after 10 s
    env.app.config["CLOCK"].at += timedelta(seconds=11)
    return wanted, errors + _race(env.app)


def _slow(env: Env) -> SlowSlurm:
    slurm = SlowSlurm()
    env.app.config["SLURM"] = slurm
    env.app.extensions["aipool.slurm"] = slurm
    env.slurm = slurm
    return slurm


def test_two_reconcilers_on_sqlite_submit_each_replica_once(reg: Env) -> None:  # noqa: F811
    slurm = _slow(reg)
    wanted, errors = _start_then_restart(reg, slurm)
    assert errors == []
    assert _submitted(slurm) == sorted([*wanted, *wanted])  # started once, restarted once


@pytest.fixture
def pg_env(pg_url: str, tmp_path: Path) -> Iterator[Env]:  # noqa: F811
    from flask_migrate import upgrade

    app = create_app(
        {
            **BASE,
            "DATABASE_URL": pg_url,
            "SLURM": FakeSlurm(),
            "PORTAL_HOME": str(tmp_path / "home"),
            "CLOCK": Clock(),
        }
    )
    with app.app_context():
        upgrade()
        world = seed_world()
    env = Env(app, world, app.config["SLURM"])
    yield env
    with app.app_context():
        db.engine.dispose()


def test_two_reconcilers_on_postgres_submit_each_replica_once(pg_env: Env) -> None:
    slurm = _slow(pg_env)
    wanted, errors = _start_then_restart(pg_env, slurm)
    assert errors == []
    assert _submitted(slurm) == sorted([*wanted, *wanted])  # started once, restarted once


def test_without_the_runner_lock_two_reconcilers_submit_twice(
    reg: Env,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @contextlib.contextmanager
    def everyone_runs(engine: Any, name: str) -> Iterator[bool]:
        yield True

    monkeypatch.setattr(daemon, "held", everyone_runs)
    slurm = _slow(reg)
    wanted, _ = _start_then_restart(reg, slurm)  # (a new replica's row is unique: one loses)
    submitted = _submitted(slurm)
    assert set(submitted) == wanted
    assert len(submitted) > 2 * len(wanted)  # a restart submitted by both
