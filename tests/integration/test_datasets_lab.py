"""Datasets in jobs on the lab cluster: a version mounted read-only and a workspace mounted
read-write through the job spec; the job (as alice) reads the version, cannot change it,
writes its result into the workspace, which becomes the next version; a labelled COCO export
saved as a dataset version is read by the same kind of job.

The portal gets its own SQLite database and a dataset store under the lab root (the jobs'
users must be able to reach it); both are removed at the end. The lab's tenants are only read.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from flask_migrate import upgrade

from aipool.lab.cluster import Lab
from aipool.lab.settings import portal_settings
from portal import create_app
from portal.datasets.storage import Store
from portal.extensions import db
from portal.identity.models import User
from portal.identity.service import create_token, hash_password
from portal.roles.service import role_by_name
from portal.tenancy.models import Domain, Membership, Project
from slurm_plugins.client import SlurmClient
from slurm_plugins.client.models import JobState
from tests.integration.conftest import wait_until
from tests.unit.portal.test_datasets import png

pytestmark = pytest.mark.slurm

HELLO = b"hello from a dataset version\n"


class Portal:
    def __init__(self, app: Flask, tokens: dict[str, str], nlp: int, store: Path) -> None:
        self.app, self.tokens, self.nlp, self.store = app, tokens, nlp, store

    def api(self, user: str) -> FlaskClient:
        client = self.app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.tokens[user]}"
        return client


@pytest.fixture
def portal(lab: Lab, tmp_path: Path) -> Iterator[Portal]:
    """``pt-admin`` (platform admin) and alice in the lab's ``research/nlp``."""
    store = Path(lab.cfg.root) / f"pt-datasets-{os.getpid()}"
    store.mkdir(mode=0o755)
    store.chmod(0o755)
    app = create_app(
        {
            "SECRET_KEY": "integration",
            "DATABASE_URL": f"sqlite:///{tmp_path}/portal.db",
            "DATASET_STORAGE": str(store),
            **portal_settings(),
        }
    )
    with app.app_context():
        upgrade()
        s = db.session
        users = {
            n: User(username=n, password_hash=hash_password("unused password"),
                    is_platform_admin=n == "pt-admin")
            for n in ("pt-admin", "alice")
        }  # fmt: skip
        s.add_all(users.values())
        research = Domain(name="research", description="Research domain")
        nlp = Project(name="nlp", domain=research, description="NLP group", qos="normal,low,high")
        s.add_all([research, nlp])
        s.flush()
        member = role_by_name(s, "member").id
        s.add(Membership(project_id=nlp.id, user_id=users["alice"].id, role_id=member))
        s.commit()
        tokens = {n: create_token(s, u, "it", days=1)[1] for n, u in users.items()}
        nlp_id = nlp.id
    yield Portal(app, tokens, nlp_id, store)
    with app.app_context():
        db.engine.dispose()
    Store(store).remove(store)


def _dataset(portal: Portal, name: str) -> int:
    body = {"project_id": portal.nlp, "name": name, "visibility": "project"}
    r = portal.api("alice").post("/api/v1/datasets", json=body)
    assert r.status_code == 201, r.json
    return int(r.json["id"])


def _labelled_export(portal: Portal, images_version: int) -> int:
    """A COCO export of one annotated image, saved as version 1 of ``pets-coco``."""
    admin, alice = portal.api("pt-admin"), portal.api("alice")
    labels = admin.post(
        "/api/v1/labelling/label-sets",
        json={"project_id": portal.nlp, "name": "pets", "labels": ["cat"]},
    ).json
    task = admin.post(
        "/api/v1/labelling/tasks",
        json={"project_id": portal.nlp, "name": "pets", "label_set_id": labels["id"],
              "dataset_version_id": images_version},
    ).json  # fmt: skip
    [item] = alice.get(f"/api/v1/labelling/tasks/{task['id']}/items").json
    box = {"kind": "bbox", "label": "cat", "points": [[2, 2], [12, 9]]}
    r = alice.put(
        f"/api/v1/labelling/tasks/{task['id']}/items/{item['id']}", json={"annotations": [box]}
    )
    assert r.status_code == 200, r.json
    target = _dataset(portal, "pets-coco")
    r = alice.post(
        f"/api/v1/labelling/tasks/{task['id']}/export",
        json={"format": "coco", "dataset_id": target},
    )
    assert r.status_code == 201, r.json
    return target


SCRIPT = """\
sha256sum "$AIPOOL_DATA_CORPUS/hello.txt" | cut -d' ' -f1 > "$AIPOOL_DATA_OUT/digest.txt"
ls "$AIPOOL_DATA_CORPUS" > "$AIPOOL_DATA_OUT/listing.txt"
if touch "$AIPOOL_DATA_CORPUS/new" 2>/dev/null; then echo version-writable; else echo version-read-only; fi
python3 -c 'import json, os; d = json.load(open(os.environ["AIPOOL_DATA_LABELS"] + "/annotations.json")); print("coco", len(d["images"]), len(d["annotations"]))'
id -un
"""  # noqa: E501


def _run(portal: Portal, client: SlurmClient, lab: Lab, mounts: list[dict[str, Any]]) -> str:
    spec = {"name": "pt-data", "resources": {"cpus": 1, "time": "2m"}, "script": SCRIPT,
            "mounts": mounts}  # fmt: skip
    r = portal.api("alice").post("/api/v1/jobs/spec", json={"project_id": portal.nlp, "spec": spec})
    assert r.status_code == 201, r.json
    job_id = int(r.json["job_id"])

    def finished() -> bool:
        recs = client.accounting(job_ids=[job_id])
        return bool(recs) and recs[0].state.is_finished

    wait_until(finished, 90, interval=1)
    output = Path(lab.cfg.root) / "portal" / "users" / "alice" / f"pt-data-{job_id}.out"
    try:
        text = output.read_text()
    finally:
        output.unlink(missing_ok=True)
    [rec] = client.accounting(job_ids=[job_id])
    assert (rec.state, rec.user) == (JobState.COMPLETED, "alice"), text
    return text


def test_a_job_reads_a_mounted_version_and_writes_the_next(
    portal: Portal, client: SlurmClient, lab: Lab
) -> None:
    if shutil.which("python3") is None:  # pragma: no cover - the lab nodes run on this host
        pytest.fail("python3 is needed on the lab nodes")
    alice = portal.api("alice")
    corpus = _dataset(portal, "corpus")
    files = [(io.BytesIO(HELLO), "hello.txt"), (io.BytesIO(png(16, 12)), "img/cat.png")]
    r = alice.post(
        f"/api/v1/datasets/{corpus}/upload",
        data={"files": files},
        content_type="multipart/form-data",
    )
    assert r.status_code == 201, r.json
    v1 = r.json
    labels = _labelled_export(portal, v1["id"])
    mounts = [
        alice.post(f"/api/v1/datasets/{corpus}/mounts", json={"version": 1}).json,
        alice.post(f"/api/v1/datasets/{corpus}/mounts", json={"mode": "rw", "name": "out"}).json,
        alice.post(f"/api/v1/datasets/{labels}/mounts", json={"name": "labels"}).json,
    ]
    assert [m["mode"] for m in mounts] == ["ro", "rw", "ro"]
    text = _run(portal, client, lab, mounts)
    lines = text.split()
    assert "version-read-only" in lines
    assert "alice" in lines
    assert "coco 1 1" in text
    # what the job wrote into the workspace becomes version 2, checksummed like any other
    r = alice.post(f"/api/v1/datasets/{corpus}/versions", json={"source": "workspace"})
    assert r.status_code == 201, r.json
    assert (r.json["version"], r.json["file_count"]) == (2, 2)
    digest = alice.get(f"/api/v1/datasets/{corpus}/versions/2/preview/digest.txt").json
    assert digest["text"].strip() == hashlib.sha256(HELLO).hexdigest()
    listing = alice.get(f"/api/v1/datasets/{corpus}/versions/2/preview/listing.txt").json
    assert listing["text"].split() == ["hello.txt", "img"]
    # version 1 is unchanged
    again = alice.get(f"/api/v1/datasets/{corpus}/versions/1").json
    assert again["checksum"] == v1["checksum"]
    assert sorted(p.name for p in Path(v1["path"]).iterdir()) == ["hello.txt", "img"]
