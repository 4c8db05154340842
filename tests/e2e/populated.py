"""A portal with something on every page, for the browser walks: the test world's tenants
(tests/unit/portal/world.py) with a project manager in nlp, nlp's jobs in every state (a
running one writing a log with progress), a dataset with files, a labelling task, a model and
an inference service, billing accounts and a price plan, a month of accounted use, and
capacity samples for the charts. Everything is made through the API or the portal's own
services, as a user would, on a SQLite file and the fake Slurm of tests/unit/portal.

nlp's objects carry names starting with ``nlp-`` so that a walk can check that another
tenant's pages never name them.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from accounting.alert_models import AlertDelivery, AlertState
from accounting.ingest import ingest
from accounting.meter import NodeCards, Topology, meter
from portal import userfiles
from portal.control.daemon import Daemon
from portal.database import upgrade
from portal.demo import seed_billing
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token
from slurm_plugins.client.models import JobState, Tres
from tests.e2e.conftest import serving
from tests.unit.accounting.builders import acct
from tests.unit.portal.conftest import make_app
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.test_datasets import png
from tests.unit.portal.world import PASSWORD, World, seed_world

#: the month of accounted use the usage pages are walked over
USE_DAY = datetime(2026, 11, 2, 10, 30, tzinfo=UTC)
USE_PERIOD = "window=month&day=2026-11-02"
TOPOLOGY = Topology(
    nodes={"gpu1": NodeCards("a100", 32), "npu1": NodeCards("910b", 4)},
    domains={"nlp": "research", "vision": "research", "cs101": "teaching"},
)
MANAGER = "mia"  # nlp's project manager
LOG = "\n".join(
    [
        "loading the corpus",
        *(f"epoch {e}/10 loss {1.0 / e:.3f}" for e in range(1, 5)),
        "progress: 40%",
    ]
)


@dataclass(frozen=True)
class Populated:
    url: str
    app: Flask
    world: World
    ids: dict[str, int] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def api(self, who: str) -> FlaskClient:
        client = self.app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.world.tokens[who]}"
        return client


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, (response.status_code, response.get_json())
    return response.get_json()


def _people(site: Populated) -> None:
    nlp = site.world.projects["nlp"]
    made = _ok(
        site.api("admin").post(
            "/api/v1/users",
            json={
                "username": MANAGER,
                "display_name": "Mia",
                "password": PASSWORD,
                "project_id": nlp,
                "role_id": site.world.roles["manager"],
            },
        )
    )
    site.ids["manager"] = made["id"]
    with site.app.app_context():
        user = db.session.get(User, made["id"])
        assert user is not None
        site.world.tokens[MANAGER] = create_token(db.session, user, "tests", days=None)[1]
        site.world.users[MANAGER] = user.id
        db.session.commit()
    site.ids["role"] = site.world.roles["submitter"]
    site.ids["user"] = site.world.users["alice"]
    site.ids["project"] = nlp


def _change(slurm: FakeSlurm, job_id: int, **fields: Any) -> None:
    slurm._jobs[job_id] = dataclasses.replace(slurm._jobs[job_id], **fields)


def _jobs(site: Populated, slurm: FakeSlurm, logs: Path) -> None:
    nlp = site.world.projects["nlp"]
    form = {
        "project_id": nlp,
        "name": "nlp-finetune",
        "time_limit": 120,
        "script": "#!/bin/bash\npython train.py\n",
        "gpus": 1,
    }
    running = _ok(site.api("alice").post("/api/v1/jobs", json=form))["job_id"]
    out = logs / f"nlp-finetune-{running}.out"
    out.write_text(LOG + "\n")
    started = datetime.now(UTC) - timedelta(minutes=25)
    _change(
        slurm,
        running,
        state=JobState.RUNNING,
        reason="None",
        nodes="gpu1",
        start_time=started,
        end_time=started + timedelta(minutes=120),  # Slurm's: start + time limit
        tres_alloc=Tres({"gres/gpu": 1, "gres/gpu:a100": 1, "cpu": 4, "mem": 16384}),
        stdout_path=str(out),
    )
    site.ids["job"] = running
    queued = _ok(site.api("alice").post("/api/v1/jobs", json={**form, "name": "nlp-queued"}))
    _change(slurm, queued["job_id"], reason="AssocGrpGRES")
    site.ids["pending_job"] = queued["job_id"]
    failed = _ok(site.api("alice").post("/api/v1/jobs", json={**form, "name": "nlp-failed"}))
    _change(
        slurm,
        failed["job_id"],
        state=JobState.FAILED,
        reason="NonZeroExitCode",
        start_time=started - timedelta(hours=2),
        end_time=started - timedelta(hours=1, minutes=50),
        exit_code=3,
    )
    again = _ok(site.api("alice").post(f"/api/v1/jobs/{failed['job_id']}/rerun"))
    site.ids["rerun_job"] = again["job_id"]
    # another tenant's running work, so that the pool and the queue hold more than nlp's
    slurm.add_job("dave", "cs101", reason="None", tres_alloc=Tres({"gres/shard": 8}))
    slurm.add_job("bob", "vision", JobState.PENDING, reason="Priority")


def _data(site: Populated) -> None:
    nlp = site.world.projects["nlp"]
    alice = site.api("alice")
    ds = _ok(
        alice.post(
            "/api/v1/datasets",
            json={"project_id": nlp, "name": "nlp-pets", "visibility": "project"},
        )
    )["id"]
    files = [(io.BytesIO(png(64, 48, (30 * i, 120, 200))), f"{n}.png") for i, n in enumerate("ab")]
    files.append((io.BytesIO(b"two pets, one cat and one dog\n"), "notes.txt"))
    version = _ok(
        alice.post(
            f"/api/v1/datasets/{ds}/upload",
            data={"files": files},
            content_type="multipart/form-data",
        )
    )
    labels = _ok(
        site.api("erin").post(
            "/api/v1/labelling/label-sets",
            json={"project_id": nlp, "name": "nlp-pets", "labels": ["cat", "dog"]},
        )
    )
    task = _ok(
        site.api("erin").post(
            "/api/v1/labelling/tasks",
            json={
                "project_id": nlp,
                "name": "nlp-pets-1",
                "dataset_version_id": version["id"],
                "label_set_id": labels["id"],
            },
        )
    )
    items = _ok(site.api("erin").get(f"/api/v1/labelling/tasks/{task['id']}/items"), 200)
    site.ids.update(dataset=ds, version=version["version"], task=task["id"], item=items[0]["id"])
    site.names["file"] = "a.png"


def _models(site: Populated) -> None:
    nlp = site.world.projects["nlp"]
    alice = site.api("alice")
    model = _ok(alice.post("/api/v1/presets/digits-classifier/import", json={"project_id": nlp}))
    versions = _ok(alice.get(f"/api/v1/models/{model['id']}/versions"), 200)
    service = _ok(
        alice.post(
            "/api/v1/inference", json={"version_id": versions[0]["id"], "name": "nlp-digits"}
        )
    )
    Daemon(site.app).run_pass(full=True)  # submits the service's replica (it stays queued)
    site.ids.update(model=model["id"], service=service["id"])


def _use_and_samples(site: Populated) -> None:
    jobs = [
        acct(11, "cpu=1,gres/gpu=2,gres/gpu:a100=2", hours=2, user="alice", start=USE_DAY),
        acct(12, "cpu=1,gres/shard=16", hours=2, user="sam", start=USE_DAY),
        acct(13, "cpu=1,gres/gpu=1,gres/gpu:a100=1", hours=1, user=MANAGER, start=USE_DAY),
        acct(
            14,
            "cpu=4,gres/npu=1,gres/npu:910b=1",
            hours=3,
            user="bob",
            account="vision",
            partition="npu",
            nodes="npu1",
            start=USE_DAY,
        ),
        acct(
            15,
            "cpu=1,gres/gpu=1,gres/gpu:a100=1",
            hours=3,
            user="dave",
            account="cs101",
            start=USE_DAY + timedelta(days=3),
        ),
    ]
    with site.app.app_context():
        ingest(db.engine, [u for j in jobs if (u := meter(j, TOPOLOGY)) is not None])
        seed_billing(db.session)
        db.session.commit()
    now = datetime.now(UTC)
    for minutes in range(30, 0, -5):  # half an hour of the control daemon's samples
        site.app.config["CLOCK"] = lambda at=now - timedelta(minutes=minutes): at
        try:
            Daemon(site.app).sample_pass()
        finally:
            site.app.config["CLOCK"] = None


def _alerts(site: Populated) -> None:
    """A platform channel and rule (admin), a signed DingTalk robot and a budget rule for nlp
    (erin), and a firing episode with a retried delivery, as the scheduler leaves them."""
    admin, erin = site.api("admin"), site.api("erin")
    _ok(admin.post(f"{ALERTS}/channels", json={"name": "ops-mail", "type": "email"} | OPS))
    _ok(admin.post(f"{ALERTS}/rules", json=_rule("pools", "pool_free_cards", "platform", "")))
    robot = "https://oapi.dingtalk.com/robot/send?access_token=0123456789abcdef0123456789"
    channel = {"name": "nlp-robot", "type": "dingtalk", "url": robot, "secret": "SEC0123456789ab"}
    _ok(erin.post(f"{ALERTS}/channels", json=channel | {"scope": NLP_SCOPE, "format": "markdown"}))
    budget = _rule("nlp-budget", "card_hours_share", "project", "nlp")
    _ok(erin.post(f"{ALERTS}/rules", json=budget))
    now = datetime.now(UTC)
    with site.app.app_context():
        where = {"rule": "nlp-budget", "subject": "nlp", "scope_level": "project"}
        db.session.add(AlertState(**where, scope_name="nlp", state="firing", since=now, value=0.93))
        for attempt, ok, status in ((1, False, 500), (2, True, 200)):
            db.session.add(
                AlertDelivery(
                    **where,
                    scope_name="nlp",
                    channel="nlp-robot",
                    kind="fire",
                    attempt=attempt,
                    ok=ok,
                    http_status=status,
                    error="" if ok else f"HTTP {status}",
                    at=now - timedelta(minutes=3 - attempt),
                )
            )
        db.session.commit()


ALERTS = "/api/v1/alerts"
OPS = {"recipients": ["ops@example.org"], "scope": {"level": "platform", "name": ""}}
NLP_SCOPE = {"level": "project", "name": "nlp"}


def _rule(name: str, measure: str, level: str, tenant: str) -> dict[str, Any]:
    query: dict[str, Any] = {"kind": "usage", "measure": measure}
    if measure == "card_hours_share":
        query["budget"] = 100
    channels = ["ops-mail"] if level == "platform" else ["nlp-robot"]
    comparator, threshold = ("<=", 0.0) if measure == "pool_free_cards" else (">=", 0.9)
    return {
        "name": name,
        "query": query,
        "comparator": comparator,
        "threshold": threshold,
        "for": "10m",
        "scope": {"level": level, "name": tenant},
        "severity": "urgent" if level == "platform" else "normal",
        "channels": channels,
    }


@contextmanager
def populated_portal(tmp: Path) -> Iterator[Populated]:
    """The populated portal under waitress; its world and the ids of what was made."""
    logs = tmp / "logs"
    logs.mkdir()
    app = make_app(
        tmp / "portal.db",
        tmp,
        DATASET_STORAGE=str(tmp / "datasets"),
        MODEL_STORAGE=str(tmp / "store"),
        MODEL_WORK=str(tmp / "work"),
        MODEL_MIRROR=str(tmp / "mirror"),
        TIMEZONE="Asia/Shanghai",
    )
    with app.app_context():
        upgrade()
        world = seed_world()
    # every portal user owns what this process writes (the job's log, the model's files)
    saved = userfiles.uid_of
    userfiles.uid_of = lambda user: os.getuid()  # type: ignore[assignment]
    try:
        site = Populated("", app, world)
        _people(site)
        _jobs(site, app.config["SLURM"], logs)
        _data(site)
        _models(site)
        _use_and_samples(site)
        _alerts(site)
        with serving(app) as url:
            yield Populated(url, app, world, site.ids, site.names)
    finally:
        userfiles.uid_of = saved  # type: ignore[assignment]
        with app.app_context():
            db.engine.dispose()
