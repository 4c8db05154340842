"""The permission matrix of datasets and labelling: every user of the test world against
every endpoint, for private, project and public datasets. Unreadable objects are 404 with a
message that names nothing; refused calls change nothing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from portal.audit.models import AuditEvent
from portal.datasets.models import DatasetVersion
from portal.extensions import db
from portal.labelling.models import Annotation, LabelItem
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import configure, make_dataset, png, upload

API = "/api/v1/datasets"
LAB = "/api/v1/labelling"
USERS = ("admin", "alice", "erin", "gina", "sam", "bob", "victor", "dave", "carol", "tina",
         "nobody")  # fmt: skip
# alice owns the datasets (a member of nlp); erin administers nlp's domain (project.manage);
# gina reads nlp through a group (viewer); sam holds only jobs.submit on nlp; bob and victor
# are in vision (same domain), dave and carol in cs101, tina administers the other domain.
PROJECT_READERS = {"admin", "alice", "erin", "gina", "sam"}
READERS = {
    "private": {"admin", "alice"},
    "project": PROJECT_READERS,
    "public": set(USERS),
}
WRITERS = {
    "private": {"admin", "alice"},
    "project": {"admin", "alice", "erin"},
    "public": {"admin", "alice", "erin"},
}


def expect(user: str, visibility: str, ok: int, *, write: bool) -> int:
    if user not in READERS[visibility]:
        return 404
    if write and user not in WRITERS[visibility]:
        return 403
    return ok


def counts(env: Env) -> tuple[int, int]:
    with env.app.app_context():
        return db.session.query(DatasetVersion).count(), db.session.query(AuditEvent).count()


def upload_as(client: FlaskClient, ds: int) -> Any:
    data = {"files": [(io.BytesIO(b"more"), "more.txt")]}
    return client.post(f"{API}/{ds}/upload", data=data, content_type="multipart/form-data")


@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


@pytest.mark.parametrize("visibility", ["private", "project", "public"])
def test_dataset_matrix(env: Env, store: Path, visibility: str) -> None:
    made = {}
    for user in USERS:
        ds = make_dataset(env, "alice", "nlp", name=f"d-{user}", visibility=visibility)
        assert upload(env, "alice", ds, {"a.txt": b"alpha", "i.png": png()}).status_code == 201
        made[user] = ds
    for user in USERS:
        ds = made[user]
        api = env.api(user)
        v = f"{API}/{ds}/versions/1"
        reads = {
            "get": api.get(f"{API}/{ds}"),
            "versions": api.get(f"{API}/{ds}/versions"),
            "version": api.get(v),
            "files": api.get(f"{v}/files"),
            "preview": api.get(f"{v}/preview/a.txt"),
            "raw": api.get(f"{v}/files/a.txt"),
            "archive": api.get(f"{v}/archive"),
            "mount ro": api.post(f"{API}/{ds}/mounts", json={"mode": "ro"}),
        }
        for what, r in reads.items():
            want = expect(user, visibility, 200, write=False)
            assert r.status_code == want, (user, visibility, what, r.status_code)
            if r.status_code == 404:
                assert f"d-{user}" not in r.get_data(as_text=True)
            r.close()
        # export is a read: readers reach the store check (422), others see nothing (404)
        r = api.post(f"{v}/export", json={"store": "none", "bucket": "b-1"})
        assert r.status_code == expect(user, visibility, 422, write=False), (user, "export")
        before = counts(env)
        writes = {
            "patch": (api.patch(f"{API}/{ds}", json={"description": "changed"}), 200),
            "upload": (upload_as(api, ds), 201),
            "from path": (
                api.post(f"{API}/{ds}/versions", json={"source": "path", "path": "/etc"}),
                422,
            ),
            "mount rw": (api.post(f"{API}/{ds}/mounts", json={"mode": "rw"}), 200),
        }
        for what, (r, ok) in writes.items():
            want = expect(user, visibility, ok, write=True)
            assert r.status_code == want, (user, visibility, what, r.status_code, r.json)
        if user not in WRITERS[visibility]:
            assert counts(env) == before, (user, "a refused write changed something")
            assert not store.joinpath(str(ds), "workspace").exists()
        r = api.delete(f"{API}/{ds}")
        assert r.status_code == expect(user, visibility, 204, write=True), (user, "delete")
    # lists show exactly what one may read, in every tenant
    for user in USERS:
        names = {d["name"] for d in env.api(user).get(f"{API}?page_size=100").json}
        left = {f"d-{u}" for u in USERS if u not in WRITERS[visibility]}
        assert names == (left if user in READERS[visibility] else set()), user


@pytest.fixture
def task(env: Env, store: Path) -> dict[str, Any]:
    ds = make_dataset(env, "alice", "nlp", name="pets", visibility="project")
    upload(env, "alice", ds, {"a.png": png(), "b.png": png()})
    version = env.api("alice").get(f"{API}/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    labels = (
        env.api("erin")
        .post(f"{LAB}/label-sets", json={"project_id": nlp, "name": "pets", "labels": ["cat"]})
        .json
    )
    body = {"project_id": nlp, "name": "t", "dataset_version_id": version,
            "label_set_id": labels["id"]}  # fmt: skip
    made = env.api("erin").post(f"{LAB}/tasks", json=body).json
    items = env.api("erin").get(f"{LAB}/tasks/{made['id']}/items").json
    return {"id": made["id"], "set": labels["id"], "items": [i["id"] for i in items],
            "target": ds}  # fmt: skip


LABEL_READERS = PROJECT_READERS  # project.read or any grant on nlp
ANNOTATORS = {"admin", "alice", "erin", "sam"}  # jobs.submit
MANAGERS = {"admin", "erin"}  # project.manage


def lab_expect(user: str, allowed: set[str], ok: int) -> int:
    if user not in LABEL_READERS:
        return 404
    return ok if user in allowed else 403


@pytest.mark.parametrize("user", USERS)
def test_labelling_matrix(env: Env, task: dict[str, Any], user: str) -> None:
    api = env.api(user)
    t, item = task["id"], task["items"][0]
    box = {"annotations": [{"kind": "bbox", "label": "cat", "points": [[1, 1], [5, 5]]}]}
    nlp = env.world.projects["nlp"]
    reads = {
        "task": api.get(f"{LAB}/tasks/{t}"),
        "progress": api.get(f"{LAB}/tasks/{t}/progress"),
        "items": api.get(f"{LAB}/tasks/{t}/items"),
        "item": api.get(f"{LAB}/tasks/{t}/items/{item}"),
        "image": api.get(f"{LAB}/tasks/{t}/items/{item}/image"),
        "next": api.get(f"{LAB}/tasks/{t}/next"),
        "label set": api.get(f"{LAB}/label-sets/{task['set']}"),
    }
    for what, r in reads.items():
        assert r.status_code == lab_expect(user, LABEL_READERS, 200), (user, what)
        r.close()
    listed = api.get(f"{LAB}/tasks").json
    assert [x["id"] for x in listed] == ([t] if user in LABEL_READERS else [])
    sets = api.get(f"{LAB}/label-sets").json
    assert [x["id"] for x in sets] == ([task["set"]] if user in LABEL_READERS else [])
    with env.app.app_context():
        before = db.session.query(Annotation).count()
    r = api.put(f"{LAB}/tasks/{t}/items/{item}", json=box)
    assert r.status_code == lab_expect(user, ANNOTATORS, 200), (user, "annotate")
    with env.app.app_context():
        after = db.session.query(Annotation).count()
        status = db.session.get(LabelItem, item).status  # type: ignore[union-attr]
    assert after == (1 if user in ANNOTATORS else before)
    if user not in ANNOTATORS:
        env.api("alice").put(f"{LAB}/tasks/{t}/items/{item}", json=box)
    else:
        assert status == "annotated"
    r = api.post(f"{LAB}/tasks/{t}/items/{item}/review", json={"decision": "accept"})
    assert r.status_code == lab_expect(user, MANAGERS, 200), (user, "review")
    r = api.patch(f"{LAB}/label-sets/{task['set']}", json={"labels": ["cat", "dog"]})
    assert r.status_code == lab_expect(user, MANAGERS, 200), (user, "label set")
    r = api.post(f"{LAB}/label-sets", json={"project_id": nlp, "name": "x", "labels": ["a"]})
    assert r.status_code == lab_expect(user, MANAGERS, 201), (user, "new label set")
    with api.get(f"{LAB}/tasks/{t}/export?format=coco") as r:
        assert r.status_code == lab_expect(user, LABEL_READERS, 200), (user, "export")
    body = {"format": "yolo", "dataset_id": task["target"]}
    r = api.post(f"{LAB}/tasks/{t}/export", json=body)
    # saving into alice's project dataset: she, erin and admin may write it
    want = 404 if user not in LABEL_READERS else (201 if user in MANAGERS | {"alice"} else 403)
    assert r.status_code == want, (user, "export as version")
