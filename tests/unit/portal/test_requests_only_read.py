"""Requests only read: a GET on every route of the portal (API and pages), by every user of
the test world (the site admin, domain admins, project managers, students, a viewer, a group
member, a custom role, someone in no project), makes no Slurm write, changes no file under
the portal's home (its stores, job and model-work directories, users' directories) and
commits no change to the database: every table's rows, ordered by primary key, hash the same
before and after each request, but for the few writes listed in ``NOT_STATE`` with the reason
each is not the state of anything.

The world behind the routes has something for each of them, and work the control daemon has
not done yet: a fine-tuning job and an evaluation job that have ended, a replica whose job
failed, a running replica whose address no longer answers, a stopped service with its replica
still recorded, an expired one, a labelling task with items no annotator holds yet. A GET that
reconciled, refreshed or claimed would submit, cancel, move files or commit rows here."""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy import select

from portal.demo import seed_billing
from portal.extensions import db, limiter
from portal.inference.models import Replica
from portal.registry.models import Evaluation
from slurm_plugins.client.models import JobState
from tests.unit.portal.conftest import Env, make_app
from tests.unit.portal.fakes import FakeSlurm
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_datasets import configure, make_dataset, png, upload
from tests.unit.portal.test_pages import login
from tests.unit.portal.test_registry import T0, Clock
from tests.unit.portal.test_registry_runs import import_digits, run_like_the_job, set_job, train
from tests.unit.portal.world import World

pytestmark = pytest.mark.usefixtures("users_own_files")

# routes no unit test answers with success: the Jupyter proxy needs a running server, a
# service's health a running replica (the call is made, with the service's token), and
# /metrics is off (404) without METRICS_TOKEN or METRICS_ALLOW (test_metrics_endpoint.py)
NEVER_OK = {"jupyter_proxy.forward", "jobs.Jupyter", "inference.Health", "metrics"}
QUERY = {"labelling.Export": "?format=coco", "usage.Export": "?format=csv"}
# writes a GET may make because they are no state of anything the portal keeps, by table and
# column (None: the whole table), with the reason
NOT_STATE: dict[tuple[str, str | None], str] = {
    ("api_tokens", "last_used_at"): "when a token was last used (at most once a minute), shown "
    "on the tokens page so an unused one can be revoked: a record of the request, as the "
    "access log is",
}


@dataclass
class Site:
    env: Env
    home: Path
    db_file: Path
    values: dict[str, str] = field(default_factory=dict)  # path parameter -> a real value
    by_endpoint: dict[str, dict[str, str]] = field(default_factory=dict)  # where one differs
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # by endpoint


@pytest.fixture
def site(
    seeded_db: tuple[Path, World], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Site]:
    src, world = seeded_db
    db_file = tmp_path / "db" / "portal.db"  # a database row is not a file of the home
    db_file.parent.mkdir()
    shutil.copyfile(src, db_file)
    home = tmp_path / "home"
    slurm = FakeSlurm()
    logo = tmp_path / "logo.png"
    logo.write_bytes(png(8, 8))
    app = make_app(
        db_file, home, PORTAL_HOME=str(home), SLURM=slurm, CLOCK=Clock(), SITE_LOGO=str(logo)
    )
    limiter.reset()
    env = Env(app, world, slurm)
    configure(env, home / "datasets-import", monkeypatch, DATASET_STORAGE=str(home / "datasets"))
    yield Site(env, home, db_file, *_seed(env))
    with app.app_context():
        db.engine.dispose()


def _seed(env: Env) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, Any]]:
    alice, admin = env.api("alice"), env.api("admin")
    # a dataset version of images, a label set and a labelling task on it
    ds = make_dataset(env, "alice", "nlp", name="pets", visibility="project")
    images = {f"img/{n}.png": png(64, 48) for n in "ab"}
    assert upload(env, "alice", ds, images).status_code == 201
    dv = alice.get(f"/api/v1/datasets/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    body = {"project_id": nlp, "name": "pets", "labels": ["cat", "dog"]}
    label_set = env.api("erin").post("/api/v1/labelling/label-sets", json=body).json["id"]
    body = {
        "project_id": nlp,
        "name": "pets-1",
        "dataset_version_id": dv,
        "label_set_id": label_set,
    }
    task = env.api("erin").post("/api/v1/labelling/tasks", json=body).json["id"]
    item = alice.get(f"/api/v1/labelling/tasks/{task}/items").json[0]["id"]
    box = {"kind": "bbox", "label": "cat", "points": [[10, 8], [30, 28]]}
    r = alice.put(f"/api/v1/labelling/tasks/{task}/items/{item}", json={"annotations": [box]})
    assert r.status_code == 200, r.json
    # a model with a fine-tuned version, an alias, a share and a finished evaluation
    model = import_digits(env)
    train(env, model)
    assert alice.put(f"/api/v1/models/{model}/aliases/prod", json={"version": 2}).status_code == 200
    share = {"grantee_kind": "user", "grantee_id": env.world.users["bob"]}
    assert alice.post(f"/api/v1/models/{model}/shares", json=share).status_code == 201
    r = alice.post(f"/api/v1/models/{model}/versions/2/evaluations", json={})
    run_like_the_job(env, r.json["job_id"])
    with env.app.app_context():  # a plot besides the confusion matrix, as other tasks draw
        workdir = Path(db.session.get(Evaluation, r.json["id"]).workdir)  # type: ignore[union-attr]
    (workdir / "pr-curve.png").write_bytes(png())
    set_job(env, r.json["job_id"], JobState.COMPLETED)
    evaluation = r.json["id"]
    # services: one running, one to stop, one to expire; their replicas submitted
    v2 = alice.get(f"/api/v1/models/{model}/versions/2").json["id"]
    created = [
        alice.post("/api/v1/inference", json={"version_id": v2, "name": n}).json
        for n in ("serving", "stopping", "expiring", "unanswering")
    ]
    services = [s["id"] for s in created]
    ends = (T0 + timedelta(hours=1)).isoformat()
    alice.patch(f"/api/v1/inference/{services[2]}", json={"expires_at": ends})
    reconcile(env)
    replicas = {
        s: alice.get(f"/api/v1/inference/{s}").json["replica_jobs"][0]["job_id"] for s in services
    }
    # work the control daemon has not done yet: a GET must leave all of it alone
    r = alice.post(f"/api/v1/models/{model}/versions/2/fine-tune", json={})
    run_like_the_job(env, r.json["job_id"])
    set_job(env, r.json["job_id"], JobState.COMPLETED)
    r = alice.post(f"/api/v1/models/{model}/versions/2/evaluations", json={})
    run_like_the_job(env, r.json["job_id"])
    set_job(env, r.json["job_id"], JobState.COMPLETED)
    set_job(env, replicas[services[0]], JobState.FAILED)
    # a running replica whose recorded address no longer answers (nothing listens on port 9):
    # asking the service's health reports it, and only the reconciler changes the address
    set_job(env, replicas[services[3]], JobState.RUNNING)
    with env.app.app_context():
        row = db.session.scalars(select(Replica).filter_by(job_id=replicas[services[3]])).one()
        row.url = "http://127.0.0.1:9"
        db.session.commit()
    alice.post(f"/api/v1/inference/{services[1]}/stop")
    env.app.config["CLOCK"].at = T0 + timedelta(hours=2)
    # a job of alice's (the queue, its page, its history)
    spec = {"project_id": nlp, "name": "q", "time_limit": 5, "script": "#!/bin/bash\ntrue\n"}
    job = alice.post("/api/v1/jobs", json=spec).json["job_id"]
    with env.app.app_context():
        seed_billing(db.session)  # price plans and the projects' billing accounts
        db.session.commit()
    plans = admin.get("/api/v1/usage/billing/plans").json
    tenants = admin.get("/api/v1/usage/billing").json
    values = {
        "dataset_id": str(ds),
        "version": "1",
        "path": "img/a.png",
        "domain_id": str(env.world.domains["research"]),
        "evaluation_id": str(evaluation),
        "group_id": str(env.world.groups["nlp-readers"]),
        "project_id": str(nlp),
        "service_id": str(services[0]),
        "job_id": str(job),
        "set_id": str(label_set),
        "task_id": str(task),
        "item_id": str(item),
        "model_id": str(model),
        "number": "2",
        "alias": "prod",
        "name": "digits-classifier",
        "role_id": str(env.world.roles["submitter"]),
        "user_id": str(env.world.users["alice"]),
        "tenant": str(tenants[0]["tenant"]),
        "filename": next(
            str(p.relative_to(Path(env.app.static_folder or "")))
            for p in sorted(Path(env.app.static_folder or "").rglob("*"))
            if p.is_file()
        ),
    }
    headers = {"inference.Health": {"X-Service-Token": created[3]["token"]}}
    hook = {"name": "ops", "type": "webhook", "url": "https://hooks.example.org/x"}
    assert admin.post("/api/v1/alerts/channels", json=hook).status_code == 201
    pools = {
        "name": "pools",
        "query": {"kind": "usage", "measure": "pool_free_cards"},
        "comparator": "<=",
        "threshold": 0,
        "channels": ["ops"],
    }
    assert admin.post("/api/v1/alerts/rules", json=pools).status_code == 201
    by_endpoint = {
        "alerts.OneRule": {"name": "pools"},
        "models.VersionFile": {"path": "config.json"},
        "models.PlotPng": {"name": "pr-curve.png"},
        "usage.PricePlan": {"name": plans[0]["name"]},
        "usage_pages.bills": {"tenant": values["tenant"]},
        "usage_pages.domain": {"name": "research"},
        "usage_pages.project": {"name": "nlp"},
        "usage_pages.user": {"name": "nlp", "user": "alice"},
        "jupyter_proxy.forward": {"path": "lab"},
        "inference.Health": {"service_id": str(services[3])},
    }
    return values, by_endpoint, headers


def _url(site: Site, rule: str, endpoint: str) -> str:
    values = {**site.values, **site.by_endpoint.get(endpoint, {})}

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        assert name in values, f"{rule}: no value for <{name}>: add one to the seed"
        return values[name]

    return re.sub(r"<(?:[a-z]+:)?(\w+)>", fill, rule) + QUERY.get(endpoint, "")


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and modification time."""
    out = {}
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


class Rows:
    """Every table of the database, each as a count of rows and a hash of them in
    primary-key order, read through a connection of its own (what requests committed)."""

    def __init__(self, db_file: Path) -> None:
        self.engine = sa.create_engine(f"sqlite:///{db_file}")
        self.meta = sa.MetaData()
        self.meta.reflect(self.engine)
        assert len(self.meta.tables) > 40  # the whole schema, not a few tables

    def _columns(self, table: sa.Table) -> list[sa.Column[Any]]:
        return [c for c in table.columns if (table.name, c.name) not in NOT_STATE]

    def snapshot(self) -> dict[str, tuple[int, str]]:
        out = {}
        with self.engine.connect() as conn:
            for name, table in sorted(self.meta.tables.items()):
                if (name, None) in NOT_STATE:
                    continue
                order = list(table.primary_key.columns) or list(table.columns)
                rows = conn.execute(sa.select(*self._columns(table)).order_by(*order)).all()
                digest = hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest()
                out[name] = (len(rows), digest)
        return out

    def changed(self, before: dict[str, tuple[int, str]]) -> list[str]:
        now = self.snapshot()
        return [
            f"{t}: {before[t][0]} -> {now[t][0]} rows" if before[t][0] != now[t][0] else t
            for t in sorted(now)
            if now[t] != before.get(t)
        ]

    def close(self) -> None:
        self.engine.dispose()


def _writes(slurm: FakeSlurm) -> list[Any]:
    return [*slurm.submitted, *slurm.cancelled, *slurm.applied]


def test_a_get_on_every_route_writes_nothing(site: Site) -> None:
    env = site.env
    rules = sorted(
        (r.rule, r.endpoint) for r in env.app.url_map.iter_rules() if "GET" in (r.methods or ())
    )
    assert len(rules) > 90  # the whole portal, not a few routes
    pages = {who: login(env, who) for who in env.world.users}
    api = {who: env.api(who) for who in env.world.users}
    writes, tree = len(_writes(env.slurm)), _tree(site.home)
    rows = Rows(site.db_file)
    before = rows.snapshot()
    unanswered = []
    for rule, endpoint in rules:
        url = _url(site, rule, endpoint)
        clients: dict[str, FlaskClient] = api if rule.startswith("/api/") else pages
        ok = False
        for who, client in clients.items():
            with client.get(url, headers=site.headers.get(endpoint, {})) as r:
                ok |= r.status_code < 400
            assert len(_writes(env.slurm)) == writes, f"GET {url} as {who} wrote to Slurm"
            now = _tree(site.home)
            changed = sorted(set(now.items()) ^ set(tree.items()))
            assert not changed, f"GET {url} as {who} changed files: {changed[:5]}"
            assert not (tables := rows.changed(before)), f"GET {url} as {who} wrote {tables}"
        if not ok and endpoint not in NEVER_OK:
            unanswered.append(url)
    rows.close()
    assert unanswered == [], f"no user could read {unanswered} (the seed lacks their object)"
    # and the work the GETs left alone is the control daemon's: one pass does it
    done = reconcile(env)
    assert len(_writes(env.slurm)) > writes
    assert any("record its results" in line for line in done), done
    assert any("record failure" in line for line in done), done
    assert any("expire" in line for line in done), done
    assert any("not ready replica 0" in line for line in done), done  # the unanswering one
