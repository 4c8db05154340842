"""Dataset and labelling pages: they render for readers only, forms need CSRF and write
through the services, and a bad upload from the page is a message that leaves nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import configure, make_dataset, png, staged, upload
from tests.unit.portal.test_pages import csrf_of, login


@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


def test_create_a_dataset_and_upload_from_the_pages(env: Env, store: Path) -> None:
    client = login(env, "alice")
    page = client.get("/datasets").get_data(as_text=True)
    assert "nlp" in page
    assert "vision" not in page  # only projects one may create in
    form = {"project_id": env.world.projects["nlp"], "name": "notes", "visibility": "project"}
    assert client.post("/datasets", data=form).status_code == 400  # no CSRF token
    r = client.post("/datasets", data={**form, "csrf_token": csrf_of(page)})
    assert r.status_code == 302
    detail = r.headers["Location"]
    page = client.get(detail).get_data(as_text=True)
    assert "No version yet." in page
    files = {
        "files": [(io.BytesIO(b"hello"), "dir/a.txt"), (io.BytesIO(b""), "")],
        "extract": "1",
        "note": "from the page",
        "csrf_token": csrf_of(page),
    }
    r = client.post(detail, data=files, content_type="multipart/form-data")
    assert r.status_code == 302
    page = client.get(detail).get_data(as_text=True)
    assert "v1" in page
    assert "dir/a.txt" in page
    assert "mounts: [{name: notes" in page
    # a bad archive from the page: the message, no version, nothing staged
    bad = {"files": [(io.BytesIO(b"junk"), "x.zip")], "extract": "1", "csrf_token": csrf_of(page)}
    r = client.post(detail, data=bad, content_type="multipart/form-data")
    assert r.status_code == 422
    assert "not a readable archive" in r.get_data(as_text=True)
    assert staged(store) == []
    assert client.get(f"{detail}?version=2").status_code == 404
    # a version from a workspace that is not there, or holds a link: said at the source
    copy = {"source": "workspace", "csrf_token": csrf_of(page)}
    r = client.post(f"{detail}/import", data=copy)
    assert r.status_code == 422
    assert "has no workspace yet" in r.get_data(as_text=True)
    workspace = store / detail.rsplit("/", 1)[-1] / "workspace"
    workspace.mkdir()
    (workspace / "etc").symlink_to("/etc")
    r = client.post(f"{detail}/import", data=copy)
    assert r.status_code == 422
    assert "etc: links are not allowed" in r.get_data(as_text=True)
    # the same name twice is a message on the form
    r = client.post("/datasets", data={**form, "csrf_token": csrf_of(page)})
    assert r.status_code == 409
    assert "already has a dataset named notes" in r.get_data(as_text=True)


def test_previews_and_other_tenants(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", name="mixed")
    upload(env, "alice", ds, {"a.png": png(8, 6), "b.txt": b"<b>bold?</b>", "c.bin": b"\0\1"})
    client = login(env, "alice")
    image = client.get(f"/datasets/{ds}/v/1/preview/a.png").get_data(as_text=True)
    assert 'id="preview-image"' in image
    assert "8 \u00d7 6 pixels" in image  # width x height
    text = client.get(f"/datasets/{ds}/v/1/preview/b.txt").get_data(as_text=True)
    assert "&lt;b&gt;bold?&lt;/b&gt;" in text  # escaped, never markup
    binary = client.get(f"/datasets/{ds}/v/1/preview/c.bin").get_data(as_text=True)
    assert "There is no preview" in binary
    assert client.get(f"/datasets/{ds}/v/1/preview/nope").status_code == 404
    other = login(env, "dave")
    assert "mixed" not in other.get("/datasets").get_data(as_text=True)
    assert other.get(f"/datasets/{ds}").status_code == 404
    assert other.get(f"/datasets/{ds}/v/1/preview/a.png").status_code == 404


def test_labelling_pages(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", name="pets", visibility="project")
    upload(env, "alice", ds, {"a.png": png(), "b.png": png()})
    version = env.api("alice").get(f"/api/v1/datasets/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    labels = (
        env.api("erin")
        .post(
            "/api/v1/labelling/label-sets",
            json={"project_id": nlp, "name": "pets", "labels": ["cat", "dog"]},
        )
        .json
    )
    task = env.api("erin").post(
        "/api/v1/labelling/tasks",
        json={"project_id": nlp, "name": "pets-1", "dataset_version_id": version,
              "label_set_id": labels["id"]},
    ).json  # fmt: skip
    items = env.api("erin").get(f"/api/v1/labelling/tasks/{task['id']}/items").json
    alice = login(env, "alice")
    assert "pets-1" in alice.get("/labelling").get_data(as_text=True)
    page = alice.get(f"/labelling/tasks/{task['id']}").get_data(as_text=True)
    assert "Not annotated yet: 2" in page
    assert "a.png" in page
    annotate = alice.get(f"/labelling/tasks/{task['id']}/items/{items[0]['id']}")
    html = annotate.get_data(as_text=True)
    assert 'data-labels=\'["cat", "dog"]\'' in html
    assert 'data-review=""' in html  # no review buttons for a member
    assert "labelling.js" in html
    erin = login(env, "erin")
    html = erin.get(f"/labelling/tasks/{task['id']}/items/{items[0]['id']}").get_data(as_text=True)
    assert 'id="accept"' in html
    gina = login(env, "gina")  # a viewer: sees, cannot draw
    html = gina.get(f"/labelling/tasks/{task['id']}/items/{items[0]['id']}").get_data(as_text=True)
    assert 'data-readonly="1"' in html
    dave = login(env, "dave")
    assert "pets-1" not in dave.get("/labelling").get_data(as_text=True)
    assert dave.get(f"/labelling/tasks/{task['id']}").status_code == 404
    assert dave.get(f"/labelling/tasks/{task['id']}/items/{items[0]['id']}").status_code == 404
    with alice.get("/static/labelling.js") as script:
        assert script.status_code == 200
        assert b"keydown" in script.data


def test_managers_make_label_sets_and_tasks_on_the_page(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", name="birds", visibility="project")
    upload(env, "alice", ds, {"a.png": png(), "b.png": png()})
    version = env.api("alice").get(f"/api/v1/datasets/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    alice = login(env, "alice")  # a member: no forms
    assert 'id="new-task"' not in alice.get("/labelling").get_data(as_text=True)
    erin = login(env, "erin")
    page = erin.get("/labelling").get_data(as_text=True)
    assert "birds v1 (2 files)" in page
    form = {"set-project_id": nlp, "set-name": "birds", "set-labels": "gull, tern ,",
            "set-csrf_token": csrf_of(page)}  # fmt: skip
    assert erin.post("/labelling", data=form).status_code == 302
    sets = env.api("erin").get("/api/v1/labelling/label-sets").json
    assert [(s["name"], s["labels"]) for s in sets] == [("birds", ["gull", "tern"])]
    again = erin.post("/labelling", data=form)
    assert again.status_code == 409
    assert "already has a label set named" in again.get_data(as_text=True)
    page = erin.get("/labelling").get_data(as_text=True)
    task = {"task-project_id": nlp, "task-name": "birds-1", "task-dataset_version_id": version,
            "task-label_set_id": sets[0]["id"], "task-csrf_token": csrf_of(page)}  # fmt: skip
    r = erin.post("/labelling", data=task)
    assert r.status_code == 302
    page = erin.get(r.headers["Location"]).get_data(as_text=True)
    assert "Labelling: birds-1" in page
    assert "Not annotated yet: 2" in page


def test_settings_and_delete_on_the_page(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", name="shared", visibility="project")
    upload(env, "alice", ds, {"a.txt": b"1"})
    alice = login(env, "alice")
    url = f"/datasets/{ds}"
    token = csrf_of(alice.get(url).get_data(as_text=True))
    bad = {"action": "settings", "visibility": "everyone", "description": "", "csrf_token": token}
    r = alice.post(url, data=bad)
    assert r.status_code == 422
    assert "Not a valid choice" in r.get_data(as_text=True)
    good = {**bad, "visibility": "public", "description": "for all"}
    assert alice.post(url, data=good).status_code == 302
    dave = login(env, "dave")
    page = dave.get(url).get_data(as_text=True)
    assert "for all" in page
    assert 'id="settings"' not in page  # a reader of a public dataset changes nothing
    dave_token = csrf_of(page)
    r = dave.post(url, data={**good, "visibility": "private", "csrf_token": dave_token})
    assert r.status_code == 403
    r = dave.post(url, data={"action": "delete", "csrf_token": dave_token})
    assert r.status_code == 403
    r = alice.post(url, data={"action": "delete", "csrf_token": token})
    assert r.status_code == 302
    assert "deleted" in alice.get("/datasets").get_data(as_text=True)
    assert alice.get(url).status_code == 404
    assert not (store / str(ds) / "v1").exists()
