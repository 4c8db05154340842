"""Backup and restore, round trip on a lab of the test's own: tenants, quotas, jobs that
Slurm ran and accounting imported, a bill, a model and a dataset version; ``backup create``;
the lab taken down and a fresh one (same name and ports, empty state) brought up; ``backup
restore``; the portal shows the same tenants, quotas, usage, bills, models and dataset
versions, field by field, and sacct the same jobs.

The portal runs in this process on the side lab's database (its services are not started:
a restore needs the portal stopped); ``aipool backup`` and ``aipool accounting`` run as the
commands an operator types, with the side lab named by the ``AIPOOL_LAB_*`` variables.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import secrets
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from accounting.billing import post_bill
from aipool.lab import host
from aipool.lab.cluster import Lab
from aipool.lab.config import MEMBER_INVENTORY
from aipool.lab.services import portal_db
from aipool.lab.settings import portal_settings
from portal import create_app
from portal.database import upgrade
from portal.demo import passwords_from, seed, seed_billing, seed_domain_admins
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import side_lab, wait_job, wait_until

pytestmark = pytest.mark.slurm

SHIFT = 120  # the side lab's ports: clear of the shared lab and of the other side labs
REPO = Path(__file__).resolve().parents[2]
JOB = "#!/bin/bash\nsleep 1\n"
WEIGHTS = {"config.json": b'{"layers": 2}', "weights.bin": bytes(range(256)) * 64}
DATA = {"train.csv": b"x,y\n1,2\n3,4\n", "labels.txt": b"cat\ndog\n"}


def _env(side: Lab) -> dict[str, str]:
    """The side lab for the commands run in a child process (LabConfig.from_env)."""
    return {
        **os.environ,
        "AIPOOL_LAB_DIR": str(side.cfg.root),
        "AIPOOL_LAB_CLUSTER": side.cfg.cluster,
        # the side lab's ports: the lab under test's own offset and SHIFT beyond it
        "AIPOOL_LAB_PORT_OFFSET": str(side.cfg.ports.offset),
        "AIPOOL_LAB_INVENTORY": str(side.cfg.inventory),
        "PYTHONPATH": str(REPO),
        "LANG": "C.UTF-8",
    }


def _aipool(side: Lab, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "aipool.cli", *args],
        env=_env(side),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, f"aipool {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done.stdout


def _portal(side: Lab) -> Flask:
    """The portal on the side lab's database and stores, as `lab services up` would run it."""
    cfg = side.cfg
    secret = cfg.etc / "portal_secret"
    if not secret.exists():
        host.write_private(secret, secrets.token_hex(32))
    return create_app(
        {
            **portal_settings(cfg),
            "SECRET_KEY": secret.read_text().strip(),
            "DATABASE_URL": portal_db(cfg),
            "PORTAL_HOME": str(cfg.root / "portal"),
            "ROOT_HELPER": None,
        }
    )


def _api(app: Flask, token: str) -> FlaskClient:
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client


def _targz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.json


def _populate(side: Lab, app: Flask, start: dt.datetime) -> str:
    """Tenants, a quota, jobs through Slurm and their imported usage, a bill, a model and a
    dataset version; returns the platform admin's API token."""
    with app.app_context():
        upgrade()
        seed(db.session, passwords_from({}))
        seed_domain_admins(db.session)
        seed_billing(db.session)
        admin = db.session.scalar(select(User).where(User.username == "admin"))
        assert admin is not None
        token = create_token(db.session, admin, "backup", days=1)[1]
    api = _api(app, token)
    projects = {p["name"]: p["id"] for p in _ok(api.get("/api/v1/projects"))}
    _ok(api.put(f"/api/v1/projects/{projects['nlp']}/quota", json={"gpus": 2, "cpus": 12}))
    _ok(api.put(f"/api/v1/projects/{projects['vision']}/quota", json={"shards": 64}))

    client = SlurmClient(env=side.cfg.env(), timeout=30)
    ids = [
        client.submit(JOB, ["-p", "gpu", "--gres=gpu:a100:1", "-o", "/dev/null"], as_user="alice"),
        client.submit(JOB, ["-p", "gpu", "--gres=shard:8", "-o", "/dev/null"], as_user="bob"),
        client.submit(JOB, ["-p", "cpu", "-c", "2", "-o", "/dev/null"], as_user="dave"),
    ]
    for job_id in ids:
        wait_job(client, job_id, lambda j: j.state.is_finished, 60)

    def recorded() -> bool:
        done = client.accounting(start=f"{start:%Y-%m-%dT%H:%M:%S}", job_ids=ids)
        return len({j.job_id for j in done if j.end_time}) == len(ids)

    wait_until(recorded, 30)
    since = f"{start - dt.timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}"
    _aipool(side, "accounting", "ingest", "--lab", "--db", portal_db(side.cfg), "--since", since)

    with app.app_context():
        last_month = (start.replace(day=1) - dt.timedelta(days=1)).replace(tzinfo=dt.UTC)
        post_bill(db.session, "nlp", last_month, actor="admin")
    model = _ok(
        api.post("/api/v1/models", json={"project_id": projects["nlp"], "name": "m1", "task": "t"}),
        201,
    )
    upload = {"file": (io.BytesIO(_targz(WEIGHTS)), "model.tar.gz")}
    _ok(api.post(f"/api/v1/models/{model['id']}/versions", data=upload), 201)
    ds = _ok(
        api.post("/api/v1/datasets", json={"project_id": projects["vision"], "name": "pets"}), 201
    )
    files = {"files": [(io.BytesIO(v), k) for k, v in DATA.items()]}
    _ok(api.post(f"/api/v1/datasets/{ds['id']}/upload", data=files), 201)
    return token


def _file(api: FlaskClient, url: str) -> tuple[int, bytes]:
    with api.get(url) as got:  # a file response: closed, not left to the collector
        return got.status_code, got.get_data()


def _shown(app: Flask, token: str, side: Lab, start: dt.datetime) -> dict[str, Any]:
    """What the portal shows of every restored kind, and the jobs sacct lists."""
    api = _api(app, token)
    out: dict[str, Any] = {
        "domains": _ok(api.get("/api/v1/domains")),
        "projects": _ok(api.get("/api/v1/projects")),
        "usage": _ok(api.get(f"/api/v1/usage?month={start:%Y-%m}&by=project")),
        "accounts": _ok(api.get("/api/v1/usage/billing")),
        "billing": {t: _ok(api.get(f"/api/v1/usage/billing/{t}")) for t in ("nlp", "vision")},
        "models": _ok(api.get("/api/v1/models")),
        "datasets": _ok(api.get("/api/v1/datasets")),
    }
    out["quotas"] = {
        p["name"]: _ok(api.get(f"/api/v1/projects/{p['id']}/quota")) for p in out["projects"]
    }
    out["versions"] = {
        m["name"]: _ok(api.get(f"/api/v1/models/{m['id']}/versions")) for m in out["models"]
    }
    for m in out["models"]:  # the artifact itself reads back (decrypted with the same key)
        url = f"/api/v1/models/{m['id']}/versions/1/files/weights.bin"
        out[f"model-file-{m['name']}"] = _file(api, url)
    out["dataset_versions"] = {
        d["name"]: _ok(api.get(f"/api/v1/datasets/{d['id']}/versions")) for d in out["datasets"]
    }
    for d in out["datasets"]:
        url = f"/api/v1/datasets/{d['id']}/versions/1/files/train.csv"
        out[f"dataset-file-{d['name']}"] = _file(api, url)
    client = SlurmClient(env=side.cfg.env(), timeout=30)
    jobs = client.accounting(start=f"{start - dt.timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}")
    out["sacct"] = sorted(
        (j.job_id, j.account, j.user, str(j.state), str(j.end_time)) for j in jobs
    )
    return out


@dataclass(frozen=True)
class RoundTrip:
    before: dict[str, Any]
    after: dict[str, Any]
    created: str
    restored: str
    archive: Path


@pytest.fixture(scope="module")
def round_trip(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundTrip]:
    backups = tmp_path_factory.mktemp("backups")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0)
    with side_lab(lab, "backup", "bk", SHIFT, inventory=MEMBER_INVENTORY) as side:
        app = _portal(side)
        token = _populate(side, app, start)
        before = _shown(app, token, side, start)
        with app.app_context():
            db.engine.dispose()
        created = _aipool(
            side, "backup", "create", "--lab", "--include-files", "--to", str(backups)
        )
        (archive,) = backups.glob("aipool-backup-bk-*.tar.gz")

        side.down()
        side.up()
        assert not (side.cfg.root / "portal").exists(), "the fresh lab has no portal data"
        restored = _aipool(side, "backup", "restore", "--lab", str(archive))

        app = _portal(side)
        after = _shown(app, token, side, start)
        with app.app_context():
            db.engine.dispose()
        yield RoundTrip(before, after, created, restored, archive)


def test_the_lab_had_what_a_restore_must_bring_back(round_trip: RoundTrip) -> None:
    before = round_trip.before
    assert {d["name"] for d in before["domains"]} == {"teaching", "research"}
    assert before["quotas"]["nlp"]["gpus"] == 2
    assert before["quotas"]["vision"]["shards"] == 64
    assert len(before["sacct"]) >= 3
    usage = {line["key"]: line for line in before["usage"]["lines"]}
    assert before["usage"]["total"]["jobs"] >= 3, "the jobs' usage was imported"
    assert float(usage["nlp"]["gpu_card_hours"]) > 0
    assert float(usage["vision"]["gpu_card_hours"]) > 0, "shards count as card fractions"
    assert before["billing"]["nlp"]["bills"], "nlp's package was billed"
    assert [m["name"] for m in before["models"]] == ["m1"]
    assert before["model-file-m1"] == (200, WEIGHTS["weights.bin"])
    assert before["dataset-file-pets"] == (200, DATA["train.csv"])
    assert "Wrote " in round_trip.created


@pytest.mark.parametrize(
    "kind",
    [
        "domains",
        "projects",
        "quotas",
        "usage",
        "accounts",
        "billing",
        "models",
        "versions",
        "model-file-m1",
        "datasets",
        "dataset_versions",
        "dataset-file-pets",
        "sacct",
    ],
)
def test_restore_brings_back_the_same(round_trip: RoundTrip, kind: str) -> None:
    assert round_trip.after[kind] == round_trip.before[kind]


def test_restore_says_what_it_did(round_trip: RoundTrip) -> None:
    out = round_trip.restored
    assert "Restored the portal's database (sqlite)." in out
    assert "Restored slurmdbd's database slurm_acct_db; slurmdbd was restarted." in out
    assert "Wrote the configuration to" in out
    assert "files of the stores." in out
