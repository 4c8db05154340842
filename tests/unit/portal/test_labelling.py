"""Labelling API: label sets, tasks over a dataset version, annotation by several users,
review, progress, and exports to COCO (loaded by pycocotools), YOLO and Pascal VOC, also
saved as a new dataset version."""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pycocotools.coco import COCO

from portal.extensions import db
from portal.labelling.models import Annotation, LabelItem
from portal.models import utcnow
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import configure, make_dataset, png, untar, upload

API = "/api/v1/labelling"
W, H = 64, 48
BOX = {"kind": "bbox", "label": "cat", "points": [[10, 8], [30, 28]]}
POLYGON = {"kind": "polygon", "label": "dog", "points": [[40, 5], [60, 5], [60, 25], [40, 25]]}
POINT = {"kind": "point", "label": "cat", "points": [[5.5, 40]]}
CLASS = {"kind": "class", "label": "dog", "points": []}


@dataclass
class Task:
    id: int
    items: dict[str, int]  # path -> item id
    dataset_id: int


@pytest.fixture
def task(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    """alice's project dataset of three images (and a text file that is no item); erin, the
    research domain admin, made the label set and the task."""
    configure(env, tmp_path, monkeypatch)
    ds = make_dataset(env, "alice", "nlp", name="pets", visibility="project")
    files = {f"img/{n}.png": png(W, H, (i * 60, 90, 120)) for i, n in enumerate("abc")}
    assert upload(env, "alice", ds, {**files, "readme.txt": b"pets"}).status_code == 201
    version_id = env.api("alice").get(f"/api/v1/datasets/{ds}/versions/1").json["id"]
    nlp = env.world.projects["nlp"]
    r = env.api("erin").post(
        f"{API}/label-sets", json={"project_id": nlp, "name": "pets", "labels": ["cat", "dog"]}
    )
    assert r.status_code == 201, r.json
    body = {"project_id": nlp, "name": "pets-1", "dataset_version_id": version_id,
            "label_set_id": r.json["id"]}  # fmt: skip
    r = env.api("erin").post(f"{API}/tasks", json=body)
    assert r.status_code == 201, r.json
    task_id = r.json["id"]
    items = env.api("alice").get(f"{API}/tasks/{task_id}/items").json
    return Task(task_id, {i["path"]: i["id"] for i in items}, ds)


def annotate(env: Env, who: str, task: Task, path: str, shapes: list[dict[str, Any]]) -> Any:
    url = f"{API}/tasks/{task.id}/items/{task.items[path]}"
    return env.api(who).put(url, json={"annotations": shapes})


def review(env: Env, who: str, task: Task, path: str, decision: str, *, note: str = "") -> Any:
    url = f"{API}/tasks/{task.id}/items/{task.items[path]}/review"
    return env.api(who).post(url, json={"decision": decision, "note": note})


def export(env: Env, who: str, task: Task, fmt: str, only_accepted: bool = False) -> Any:
    url = f"{API}/tasks/{task.id}/export?format={fmt}&only_accepted={str(only_accepted).lower()}"
    with env.api(who).get(url) as r:
        return r.status_code, (untar(r.data) if r.status_code == 200 else r.json)


def labelled(env: Env, task: Task) -> None:
    """a.png: all four kinds by alice, accepted; b.png: a box by sam, rejected."""
    assert (
        annotate(env, "alice", task, "img/a.png", [BOX, POLYGON, POINT, CLASS]).status_code == 200
    )
    assert annotate(env, "sam", task, "img/b.png", [BOX]).status_code == 200
    assert review(env, "erin", task, "img/a.png", "accept").status_code == 200
    assert review(env, "erin", task, "img/b.png", "reject", note="box too loose").status_code == 200


# ---------------------------------------------------------------------------- the flow
def test_task_items_are_the_versions_images(env: Env, task: Task) -> None:
    assert sorted(task.items) == ["img/a.png", "img/b.png", "img/c.png"]
    got = env.api("alice").get(f"{API}/tasks/{task.id}").json
    assert got["labels"] == ["cat", "dog"]
    assert got["name"] == "pets-1"
    item = env.api("alice").get(f"{API}/tasks/{task.id}/items/{task.items['img/a.png']}").json
    assert (item["width"], item["height"], item["status"], item["annotations"]) == (W, H, "new", [])
    with env.api("alice").get(item["image_url"]) as image:
        assert image.status_code == 200
        assert image.mimetype == "image/png"
        assert image.data[:4] == b"\x89PNG"
    assert [t["id"] for t in env.api("gina").get(f"{API}/tasks").json] == [task.id]
    sets = env.api("alice").get(f"{API}/label-sets?project_id={env.world.projects['nlp']}").json
    assert [s["labels"] for s in sets] == [["cat", "dog"]]
    one = env.api("alice").get(f"{API}/label-sets/{sets[0]['id']}").json
    assert one["name"] == "pets"


def test_annotate_review_and_progress(env: Env, task: Task) -> None:
    r = annotate(env, "alice", task, "img/a.png", [BOX, POLYGON, POINT, CLASS])
    assert r.status_code == 200, r.json
    assert r.json["status"] == "annotated"
    assert [a["kind"] for a in r.json["annotations"]] == ["bbox", "polygon", "point", "class"]
    assert r.json["annotations"][0]["points"] == [[10.0, 8.0], [30.0, 28.0]]
    # saving again replaces, never appends
    assert len(annotate(env, "alice", task, "img/a.png", [BOX, CLASS]).json["annotations"]) == 2
    assert annotate(env, "sam", task, "img/b.png", [POINT]).status_code == 200
    nxt = env.api("alice").post(f"{API}/tasks/{task.id}/next").json
    assert nxt["path"] == "img/c.png"
    progress = env.api("gina").get(f"{API}/tasks/{task.id}/progress").json
    assert progress["total"] == 3
    assert (progress["new"], progress["annotated"]) == (1, 2)
    assert progress["by_annotator"] == {"alice": 1, "sam": 1}
    # review: managers only; an accepted item is locked, a rejected one goes back to the queue
    assert review(env, "alice", task, "img/a.png", "accept").status_code == 403
    assert review(env, "erin", task, "img/c.png", "accept").status_code == 409  # nothing yet
    assert review(env, "erin", task, "img/a.png", "accept").json["status"] == "accepted"
    r = review(env, "erin", task, "img/b.png", "reject", note="missed the dog")
    assert (r.json["status"], r.json["review_note"]) == ("rejected", "missed the dog")
    r = annotate(env, "alice", task, "img/a.png", [BOX])
    assert r.status_code == 409
    assert "accepted" in r.json["message"]
    rejected = env.api("alice").get(f"{API}/tasks/{task.id}/items?status=rejected").json
    assert [i["path"] for i in rejected] == ["img/b.png"]
    assert annotate(env, "sam", task, "img/b.png", [BOX, POINT]).json["status"] == "annotated"
    progress = env.api("alice").get(f"{API}/tasks/{task.id}/progress").json
    assert (progress["accepted"], progress["annotated"], progress["new"]) == (1, 1, 1)
    assert progress["done_percent"] == pytest.approx(66.7)
    for path in ("img/c.png",):
        annotate(env, "alice", task, path, [CLASS])
    assert env.api("alice").get(f"{API}/tasks/{task.id}/next").status_code == 404
    actions = {e["action"] for e in env.api("admin").get("/api/v1/audit").json}
    assert {"labelitem.annotate", "labelitem.accept", "labelitem.reject"} <= actions


def test_several_annotators_get_different_items(env: Env, task: Task) -> None:
    def nxt(who: str, method: str = "post") -> str:
        r = getattr(env.api(who), method)(f"{API}/tasks/{task.id}/next")
        return str(r.json["path"]) if r.status_code == 200 else str(r.status_code)

    assert nxt("alice", "get") == "img/a.png"  # a look holds nothing
    assert nxt("sam", "get") == "img/a.png"
    assert nxt("alice") == "img/a.png"  # a claim does
    assert nxt("sam", "get") == "img/b.png"
    assert nxt("sam") == "img/b.png"  # a.png is alice's for now
    assert nxt("alice") == "img/a.png"  # still hers
    assert nxt("gina", "get") == "img/c.png"  # a viewer may look
    assert nxt("gina") == "403"  # and claims nothing
    assert nxt("erin") == "img/c.png"
    assert nxt("admin", "get") == "404"
    assert nxt("admin") == "404"  # all three are held
    progress = env.api("alice").get(f"{API}/tasks/{task.id}/progress").json
    assert (progress["new"], progress["by_annotator"]) == (3, {})  # claims are not work
    annotate(env, "alice", task, "img/a.png", [BOX])
    assert nxt("alice") == "404"
    # a rejected item goes back to its annotator
    review(env, "erin", task, "img/a.png", "reject", note="tighter")
    assert nxt("alice") == "img/a.png"
    assert nxt("sam") == "img/b.png"
    # claims run out: an abandoned item is handed to the next annotator
    with env.app.app_context():
        item = db.session.get(LabelItem, task.items["img/b.png"])
        assert item is not None
        item.updated_at = utcnow() - timedelta(hours=1)
        db.session.commit()
    assert nxt("alice") == "img/a.png"
    assert nxt("admin") == "img/b.png"


BAD_SHAPES: list[tuple[str, dict[str, Any], str]] = [
    ("label not in the set", {**BOX, "label": "bird"}, "not in the label set"),
    ("box with three points", {**BOX, "points": [[1, 1], [2, 2], [3, 3]]}, "2 to 2 points"),
    ("flat box", {**BOX, "points": [[1, 1], [1, 9]]}, "width and a height"),
    ("polygon of two", {**POLYGON, "points": [[1, 1], [2, 2]]}, "3 to 1000 points"),
    ("polygon on a line", {**POLYGON, "points": [[1, 1], [2, 2], [3, 3]]}, "an area"),
    ("point outside", {**POINT, "points": [[W + 1, 3]]}, "outside"),
    ("class with points", {**CLASS, "points": [[1, 1]]}, "0 to 0 points"),
]


@pytest.mark.parametrize(
    ("shape", "text"), [c[1:] for c in BAD_SHAPES], ids=[c[0] for c in BAD_SHAPES]
)
def test_bad_annotations_change_nothing(
    env: Env, task: Task, shape: dict[str, Any], text: str
) -> None:
    assert annotate(env, "alice", task, "img/a.png", [BOX]).status_code == 200
    r = annotate(env, "alice", task, "img/a.png", [POINT, shape])
    assert r.status_code == 422, r.json
    assert text in json.dumps(r.json["errors"], ensure_ascii=False), r.json
    kept = env.api("alice").get(f"{API}/tasks/{task.id}/items/{task.items['img/a.png']}").json
    assert [a["kind"] for a in kept["annotations"]] == ["bbox"]


@pytest.mark.parametrize(
    "body",
    [
        {"annotations": [{"kind": "circle", "label": "cat", "points": []}]},
        {"annotations": [{**BOX, "points": [[1, "x"], [2, 2]]}]},
        {"annotations": [{**BOX, "points": [[1], [2, 2]]}]},
        {"annotations": [{**BOX, "points": [[-1, 2], [2, 2]]}]},
        {"annotations": "nope"},
        {},
    ],
)
def test_malformed_bodies_are_field_errors(env: Env, task: Task, body: dict[str, Any]) -> None:
    url = f"{API}/tasks/{task.id}/items/{task.items['img/a.png']}"
    r = env.api("alice").put(url, json=body)
    assert r.status_code == 422
    assert r.json["errors"]["json"]
    with env.app.app_context():
        assert db.session.query(Annotation).count() == 0


def test_a_dataset_with_tasks_is_not_deleted(env: Env, task: Task) -> None:
    r = env.api("alice").delete(f"/api/v1/datasets/{task.dataset_id}")
    assert r.status_code == 409
    assert "labelling task" in r.json["message"]
    assert env.api("alice").get(f"{API}/tasks/{task.id}").status_code == 200


def test_label_sets_and_tasks_are_checked(env: Env, task: Task) -> None:
    nlp = env.world.projects["nlp"]
    sets = env.api("erin").get(f"{API}/label-sets").json
    set_id = sets[0]["id"]
    for body in (
        {"project_id": nlp, "name": "x", "labels": []},
        {"project_id": nlp, "name": "x", "labels": ["a/b"]},
        {"project_id": nlp, "name": "x", "labels": ["a", "a"]},
    ):
        r = env.api("erin").post(f"{API}/label-sets", json=body)
        assert r.status_code == 422, body
    r = env.api("erin").post(
        f"{API}/label-sets", json={"project_id": nlp, "name": "pets", "labels": ["x"]}
    )
    assert r.status_code == 409
    # members may not make label sets or tasks
    r = env.api("alice").post(
        f"{API}/label-sets", json={"project_id": nlp, "name": "mine", "labels": ["x"]}
    )
    assert r.status_code == 403
    annotate(env, "alice", task, "img/a.png", [BOX])
    r = env.api("erin").patch(f"{API}/label-sets/{set_id}", json={"labels": ["dog"]})
    assert r.status_code == 409
    assert "cat" in r.json["message"]
    r = env.api("erin").patch(f"{API}/label-sets/{set_id}", json={"labels": ["cat", "dog", "fox"]})
    assert r.json["labels"] == ["cat", "dog", "fox"]
    # a task needs images, a label set of its project and a version the creator can read
    version = env.api("alice").get(f"/api/v1/datasets/{task.dataset_id}/versions/1").json["id"]
    text_ds = make_dataset(env, "alice", "nlp", name="texts", visibility="project")
    upload(env, "alice", text_ds, {"a.txt": b"x"})
    text_version = env.api("alice").get(f"/api/v1/datasets/{text_ds}/versions/1").json["id"]
    private = make_dataset(env, "alice", "nlp", name="secret")
    upload(env, "alice", private, {"a.png": png()})
    private_version = env.api("alice").get(f"/api/v1/datasets/{private}/versions/1").json["id"]
    base = {"project_id": nlp, "name": "t", "label_set_id": set_id}
    for extra, status, text in [
        ({"dataset_version_id": text_version}, 422, "no images"),
        ({"dataset_version_id": private_version}, 404, "not found"),
        ({"dataset_version_id": 99999}, 404, "not found"),
        ({"dataset_version_id": version, "label_set_id": 99999}, 404, "not found"),
    ]:
        r = env.api("erin").post(f"{API}/tasks", json={**base, **extra})
        assert r.status_code == status, (extra, r.json)
        assert text in json.dumps(r.json), r.json
    vision = env.world.projects["vision"]
    r = env.api("admin").post(f"{API}/tasks", json={**base, "project_id": vision,
                                                    "dataset_version_id": version})  # fmt: skip
    assert r.status_code == 422
    assert "another project" in json.dumps(r.json)


# ---------------------------------------------------------------------------- exports
def to_mask(coco: COCO, ann: dict[str, Any]) -> Any:
    # pycocotools' mask code still passes copy=False to numpy 2's array protocol
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return coco.annToMask(ann)


def test_coco_export_loads_in_pycocotools(env: Env, task: Task, tmp_path: Path) -> None:
    labelled(env, task)
    status, files = export(env, "gina", task, "coco")
    assert status == 200
    assert sorted(files) == [
        "pets-1-coco/annotations.json",
        "pets-1-coco/images/img/a.png",
        "pets-1-coco/images/img/b.png",
    ]
    path = tmp_path / "annotations.json"
    path.write_bytes(files["pets-1-coco/annotations.json"])
    coco = COCO(str(path))
    cats = {c["name"]: c["id"] for c in coco.loadCats(coco.getCatIds())}
    assert sorted(cats) == ["cat", "dog"]
    images = {i["file_name"]: i for i in coco.loadImgs(coco.getImgIds())}
    assert (images["img/a.png"]["width"], images["img/a.png"]["height"]) == (W, H)
    anns = coco.loadAnns(coco.getAnnIds(imgIds=[images["img/a.png"]["id"]]))
    by_kind = {a["attributes"]["kind"]: a for a in anns}
    assert by_kind["bbox"]["bbox"] == [10, 8, 20, 20]
    assert by_kind["bbox"]["category_id"] == cats["cat"]
    assert by_kind["polygon"]["bbox"] == [40, 5, 20, 20]
    assert by_kind["polygon"]["area"] == 400
    # pycocotools rasterises the polygon and the box to masks of the right size
    mask = to_mask(coco, by_kind["polygon"])
    assert mask.shape == (H, W)
    assert abs(int(np.sum(mask)) - 400) <= 40
    assert abs(int(np.sum(to_mask(coco, by_kind["bbox"]))) - 400) <= 40
    assert by_kind["point"]["keypoints"] == [5.5, 40, 2]
    assert by_kind["class"]["category_id"] == cats["dog"]
    assert "bbox" not in by_kind["class"]
    assert coco.getImgIds(catIds=[cats["dog"]]) == [images["img/a.png"]["id"]]
    # only the accepted item
    status, files = export(env, "alice", task, "coco", only_accepted=True)
    doc = json.loads(files["pets-1-coco/annotations.json"])
    assert [i["file_name"] for i in doc["images"]] == ["img/a.png"]


def test_yolo_export(env: Env, task: Task) -> None:
    labelled(env, task)
    status, files = export(env, "alice", task, "yolo")
    assert status == 200
    data = yaml.safe_load(files["pets-1-yolo/data.yaml"])
    assert data["names"] == {0: "cat", 1: "dog"}
    lines = files["pets-1-yolo/labels/img/a.txt"].decode().splitlines()
    box = [float(v) for v in lines[0].split()]
    assert box == pytest.approx([0, 20 / W, 18 / H, 20 / W, 20 / H], abs=1e-6)
    polygon = [float(v) for v in lines[1].split()]
    assert polygon[0] == 1
    assert polygon[1:3] == pytest.approx([40 / W, 5 / H], abs=1e-6)
    assert len(polygon) == 9
    assert len(lines) == 2  # points and classes are not YOLO detection labels
    assert files["pets-1-yolo/images/img/b.png"][:4] == b"\x89PNG"


def test_voc_export(env: Env, task: Task) -> None:
    labelled(env, task)
    status, files = export(env, "alice", task, "voc")
    assert status == 200
    root = ET.fromstring(files["pets-1-voc/Annotations/img/a.xml"])  # noqa: S314 - our own output
    assert root.findtext("size/width") == str(W)
    objects = [
        (o.findtext("name"), [o.findtext(f"bndbox/{k}") for k in ("xmin", "ymin", "xmax", "ymax")])
        for o in root.iter("object")
    ]
    assert objects == [("cat", ["10", "8", "30", "28"]), ("dog", ["40", "5", "60", "25"])]
    assert files["pets-1-voc/ImageSets/Main/default.txt"] == b"img/a\nimg/b\n"
    assert files["pets-1-voc/ImageSets/Main/dog_default.txt"] == b"img/a 1\nimg/b -1\n"
    assert files["pets-1-voc/JPEGImages/img/a.png"][:4] == b"\x89PNG"


def test_export_becomes_a_dataset_version(env: Env, task: Task) -> None:
    labelled(env, task)
    target = make_dataset(env, "alice", "nlp", name="pets-coco")
    body = {"format": "coco", "dataset_id": target, "only_accepted": True}
    r = env.api("alice").post(f"{API}/tasks/{task.id}/export", json=body)
    assert r.status_code == 201, r.json
    assert (r.json["version"], r.json["source"], r.json["file_count"]) == (1, "labels", 2)
    assert r.json["origin"] == f"labelling task {task.id} (coco)"
    version_path = Path(r.json["path"])
    coco = COCO(str(version_path / "annotations.json"))
    assert len(coco.getAnnIds()) == 4
    # like any version: mountable read-only for a training or evaluation job
    mount = env.api("alice").post(f"/api/v1/datasets/{target}/mounts", json={}).json
    assert mount == {"name": "pets-coco", "path": str(version_path), "mode": "ro", "kind": "data"}
    # the target must be writable by the caller; the export must hold something
    r = env.api("gina").post(f"{API}/tasks/{task.id}/export", json=body)
    assert r.status_code == 404
    empty = make_dataset(env, "alice", "nlp", name="empty")
    fresh = {"format": "voc", "dataset_id": empty, "only_accepted": True}
    review(env, "erin", task, "img/a.png", "reject")
    r = env.api("alice").post(f"{API}/tasks/{task.id}/export", json=fresh)
    assert r.status_code == 422
    assert "No accepted item" in json.dumps(r.json)
    assert env.api("alice").get(f"/api/v1/datasets/{empty}/versions").json == []


def test_export_of_an_unlabelled_task_is_a_clear_error(env: Env, task: Task) -> None:
    status, body = export(env, "alice", task, "coco")
    assert status == 422
    assert "No annotated item" in json.dumps(body)
    status, body = export(env, "alice", task, "csv")
    assert status == 422
