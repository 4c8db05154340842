"""(f) A course's dataset uploaded and versioned, a labelling task over it annotated by a
student and exported to COCO by the teacher, on the live site; (g) the audit log shows it."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Callable

from PIL import Image
from playwright.sync_api import Page

from tests.journeys.conftest import Site

# a name of this run's own: a labelling task (which keeps its dataset) has no delete yet
NAME = f"shapes-{uuid.uuid4().hex[:6]}"


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (48, 40), colour).save(out, format="PNG")
    return out.getvalue()


def test_a_dataset_versioned_labelled_and_exported_to_coco(
    site: Site, as_user: Callable[[str], Page]
) -> None:
    carol, dave = site.api("carol"), site.api("dave")
    cs101 = next(p for p in carol.get("/projects").json() if p["name"] == "cs101")
    r = carol.post(
        "/datasets", json={"project_id": cs101["id"], "name": NAME, "visibility": "project"}
    )
    assert r.status_code == 201, r.text
    ds = r.json()["id"]
    try:
        v1 = carol.post(f"/datasets/{ds}/upload", files=[("files", ("a.png", _png((200, 30, 30))))])
        assert v1.status_code == 201, v1.text
        files = [("files", (f"{n}.png", _png((30, 30 * i, 200)))) for i, n in enumerate("bc")]
        v2 = carol.post(f"/datasets/{ds}/upload", files=files)
        assert v2.status_code == 201, v2.text
        assert (v1.json()["version"], v2.json()["version"]) == (1, 2)  # immutable versions

        labels = carol.post(
            "/labelling/label-sets",
            json={"project_id": cs101["id"], "name": NAME, "labels": ["square", "circle"]},
        ).json()
        over = {"dataset_version_id": v2.json()["id"], "label_set_id": labels["id"]}
        task = carol.post(
            "/labelling/tasks", json={"project_id": cs101["id"], "name": NAME, **over}
        ).json()
        items = dave.get(f"/labelling/tasks/{task['id']}/items").json()
        first = next(i for i in items if i["path"] == "b.png")
        box = {"kind": "bbox", "label": "square", "points": [[4, 5], [30, 25]]}
        saved = dave.put(
            f"/labelling/tasks/{task['id']}/items/{first['id']}", json={"annotations": [box]}
        )
        assert saved.status_code == 200, saved.text
        page = as_user("dave")  # the student's labelling page shows the task
        page.goto(f"{site.url}/labelling/tasks/{task['id']}")
        assert NAME in page.content()

        r = carol.get(f"/labelling/tasks/{task['id']}/export", params={"format": "coco"})
        assert r.status_code == 200, r.text
        with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
            name = next(n for n in tar.getnames() if n.endswith("annotations.json"))
            member = tar.extractfile(name)
            assert member is not None
            coco = json.load(member)
        assert {c["name"] for c in coco["categories"]} >= {"square"}
        [ann] = coco["annotations"]
        assert ann["bbox"] == [4, 5, 26, 20]
        events = site.api("admin").get("/audit", params={"actor": "carol"}).json()
        assert any(e["action"].startswith("dataset.") for e in events)
    finally:
        carol.delete(f"/datasets/{ds}")
