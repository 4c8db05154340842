"""Portal test fixtures: an app on a migrated SQLite file (copied per test), a seeded world
of tenants, a fake Slurm and API clients authenticated with tokens."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from portal import create_app
from portal.database import upgrade
from portal.extensions import db, limiter
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.world import World, seed_world


@pytest.fixture(scope="session", autouse=True)
def _cheap_password_hashing() -> Iterator[None]:
    """argon2's cheapest profile: the tests check the flows, not the hash's cost."""
    from argon2 import PasswordHasher
    from argon2.profiles import CHEAPEST

    from portal.identity import service

    saved = service._hasher
    service._hasher = PasswordHasher.from_parameters(CHEAPEST)
    yield
    service._hasher = saved


BASE = {
    "SECRET_KEY": "test-secret",
    "TESTING": True,
    "LOGIN_RATE_LIMIT": "1000 per minute",
    "ACCOUNT_LOCKOUT": "1000 per minute",
    "RATELIMIT_STORAGE_URI": "memory://",
}


def make_app(db_path: Path, tmp: Path, **extra: Any) -> Flask:
    return create_app(
        {
            **BASE,
            "DATABASE_URL": f"sqlite:///{db_path}",
            "SLURM": FakeSlurm(),
            "JOB_WORKDIR": str(tmp),
            "ADMISSION_DIR": str(tmp / "slurm-etc"),
            **extra,
        }
    )


@pytest.fixture(scope="session")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, World]:
    """The schema from the migrations (the portal's and accounting's), and the test world,
    built once."""
    tmp = tmp_path_factory.mktemp("portal-db")
    path = tmp / "seed.db"
    app = make_app(path, tmp)
    with app.app_context():
        upgrade()
        world = seed_world()
    return path, world


@dataclass
class Env:
    app: Flask
    world: World
    slurm: FakeSlurm
    clients: dict[str, FlaskClient] = field(default_factory=dict)

    def api(self, who: str) -> FlaskClient:
        """A test client that sends ``who``'s API token."""
        if who not in self.clients:
            client = self.app.test_client()
            client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.world.tokens[who]}"
            self.clients[who] = client
        return self.clients[who]


@pytest.fixture(scope="session")
def shared_app(
    seeded_db: tuple[Path, World], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Flask, Path]:
    """One app for the whole session (building one costs ~0.2 s); each test gets a fresh copy
    of the seeded database under it."""
    tmp = tmp_path_factory.mktemp("portal-app")
    path = tmp / "portal.db"
    return make_app(path, tmp), path


@pytest.fixture
def env(
    seeded_db: tuple[Path, World], shared_app: tuple[Flask, Path], tmp_path: Path
) -> Iterator[Env]:
    src, world = seeded_db
    app, path = shared_app
    app.config["ADMISSION_DIR"] = str(tmp_path / "slurm-etc")  # the test's own slurm etc
    with app.app_context():
        db.engine.dispose()
    shutil.copyfile(src, path)
    slurm = FakeSlurm()
    app.config["SLURM"] = slurm
    app.extensions["aipool.slurm"] = slurm
    limiter.reset()
    yield Env(app, world, slurm)
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def users_own_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """The password database of the unit tests: every portal user owns what this process
    writes (the portal reads users' files owner-checked, :mod:`portal.userfiles`)."""
    import os

    from portal import userfiles

    monkeypatch.setattr(userfiles, "uid_of", lambda user: os.getuid())
