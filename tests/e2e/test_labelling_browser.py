"""Datasets and labelling in Debian's headless Chromium, driven by Playwright: create a
dataset and upload files from the page, preview an image and a text; draw a box, a polygon,
a point and an image class with the keyboard shortcuts, save, review, and download a COCO
export that pycocotools loads.

The app runs under waitress on a free local port, on a seeded SQLite file and a fake Slurm
(tests/unit/portal), with its dataset storage in a temporary directory.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask_migrate import upgrade
from playwright.sync_api import Browser, Page, expect
from pycocotools.coco import COCO

from portal.extensions import db
from tests.e2e.conftest import serving
from tests.unit.portal.conftest import make_app
from tests.unit.portal.test_datasets import png
from tests.unit.portal.world import PASSWORD, World, seed_world

SHOTS = Path("/tmp/aipool-portal-e2e")  # screenshots, for a person to look at
W, H = 64, 48


@dataclass
class Site:
    url: str
    app: Flask
    world: World
    task: int
    items: dict[str, int]

    def api(self, who: str) -> Any:
        client = self.app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.world.tokens[who]}"
        return client


def _prepare(app: Flask, world: World) -> tuple[int, dict[str, int]]:
    """alice's project dataset of two images; erin's label set and task over it."""

    def api(who: str) -> Any:
        client = app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {world.tokens[who]}"
        return client

    nlp = world.projects["nlp"]
    ds = (
        api("alice")
        .post("/api/v1/datasets", json={"project_id": nlp, "name": "pets", "visibility": "project"})
        .json["id"]
    )
    files = [(io.BytesIO(png(W, H, (30 * i, 120, 200))), f"{n}.png") for i, n in enumerate("ab")]
    r = api("alice").post(
        f"/api/v1/datasets/{ds}/upload", data={"files": files}, content_type="multipart/form-data"
    )
    assert r.status_code == 201, r.json
    labels = (
        api("erin")
        .post(
            "/api/v1/labelling/label-sets",
            json={"project_id": nlp, "name": "pets", "labels": ["cat", "dog"]},
        )
        .json
    )
    task = api("erin").post(
        "/api/v1/labelling/tasks",
        json={"project_id": nlp, "name": "pets-1", "dataset_version_id": r.json["id"],
              "label_set_id": labels["id"]},
    ).json  # fmt: skip
    items = api("erin").get(f"/api/v1/labelling/tasks/{task['id']}/items").json
    return task["id"], {i["path"]: i["id"] for i in items}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("e2e-labelling")
    app = make_app(tmp / "portal.db", tmp, DATASET_STORAGE=str(tmp / "datasets"))
    with app.app_context():
        upgrade()
        world = seed_world()
    task, items = _prepare(app, world)
    with serving(app) as url:
        yield Site(url, app, world, task, items)
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
    p = context.new_page()
    p.set_default_timeout(10_000)
    yield p
    context.close()


def log_in(page: Page, url: str, user: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    expect(page.locator("h1")).to_have_text("Dashboard")


def at(page: Page, x: float, y: float) -> tuple[float, float]:
    """Page coordinates of image pixel (x, y) on the canvas."""
    box = page.locator("#canvas").bounding_box()
    assert box is not None
    return box["x"] + x * box["width"] / W, box["y"] + y * box["height"] / H


def flat(annotation: dict[str, Any]) -> list[float]:
    return [c for p in annotation["points"] for c in p]


def test_dataset_pages_upload_and_preview(page: Page, site: Site, tmp_path: Path) -> None:
    log_in(page, site.url, "bob")
    page.click("nav >> text=Datasets")
    expect(page.locator("h1")).to_have_text("Datasets")
    page.select_option("select[name=project_id]", label="vision")
    page.fill("input[name=name]", "street")
    page.select_option("select[name=visibility]", "project")
    page.click("#new-dataset button[type=submit]")
    expect(page.locator("h1")).to_have_text("Dataset street")
    (tmp_path / "cars.png").write_bytes(png(20, 10))
    (tmp_path / "notes.txt").write_text("three cars, one bus\n")
    page.set_input_files("#upload input[name=files][multiple]", [
        str(tmp_path / "cars.png"), str(tmp_path / "notes.txt")])  # fmt: skip
    page.click("#upload button[type=submit]")
    expect(page.locator("#versions tr")).to_have_count(2)
    expect(page.locator("#versions")).to_contain_text("v1")
    expect(page.locator("#files")).to_contain_text("notes.txt")
    page.click("#files >> text=cars.png")
    expect(page.locator("#preview-image")).to_be_visible()
    assert page.eval_on_selector("#preview-image", "img => img.naturalWidth") == 20
    page.go_back()
    page.click("#files >> text=notes.txt")
    expect(page.locator("#preview-text")).to_have_text("three cars, one bus\n")
    # a whole directory, sub-directories kept: version 2
    photos = tmp_path / "photos"
    (photos / "night").mkdir(parents=True)
    (photos / "day.png").write_bytes(png(4, 4))
    (photos / "night" / "moon.png").write_bytes(png(5, 5))
    page.go_back()
    page.set_input_files("#upload input[name=files][webkitdirectory]", str(photos))
    page.click("#upload button[type=submit]")
    expect(page.locator("#versions tr")).to_have_count(3)
    page.click("#versions >> text=v2")
    expect(page.locator("#files a")).to_have_text(["photos/day.png", "photos/night/moon.png"])
    # another tenant's user sees nothing of it
    page.context.clear_cookies()
    log_in(page, site.url, "dave")
    page.click("nav >> text=Datasets")
    expect(page.locator("main table")).not_to_contain_text("street")


def test_draw_the_four_kinds_review_and_export_coco(page: Page, site: Site, tmp_path: Path) -> None:
    log_in(page, site.url, "alice")
    page.click("nav >> text=Labelling")
    page.click("#tasks >> text=pets-1")
    expect(page.locator("#progress")).to_contain_text("Not annotated yet: 2")
    page.click("#items >> text=a.png")
    expect(page.locator("#labeller[data-ready='1']")).to_have_count(1)
    # a box for "cat": key 1, key b, drag
    page.keyboard.press("1")
    page.keyboard.press("b")
    page.mouse.move(*at(page, 10, 8))
    page.mouse.down()
    page.mouse.move(*at(page, 20, 18))
    page.mouse.move(*at(page, 30, 28))
    page.mouse.up()
    # a polygon for "dog": key 2, key p, four clicks, Enter
    page.keyboard.press("2")
    page.keyboard.press("p")
    for x, y in [(40, 5), (60, 5), (60, 25), (40, 25)]:
        page.mouse.click(*at(page, x, y))
    page.keyboard.press("Enter")
    # a point for "cat", then "dog" as the image's class
    page.keyboard.press("1")
    page.keyboard.press("k")
    page.mouse.click(*at(page, 5, 40))
    page.keyboard.press("2")
    page.keyboard.press("c")
    expect(page.locator("#shapes li")).to_have_count(4)
    # the box is drawn over a white halo, and its label rides on a tag of its colour above it
    edge, halo, tag = page.evaluate(
        """([w]) => {
          const c = document.getElementById("canvas"), k = c.width / w;
          const px = (x, y) => Array.from(c.getContext("2d").getImageData(
            Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
          return [px(10 * k, 18 * k), px(10 * k - 3, 18 * k), px(10 * k + 2, 8 * k - 16)];
        }""",
        [W],
    )
    assert min(halo) >= 200, halo  # white at 90 % over the image
    assert tag == [0xE5, 0x39, 0x35]  # cat's colour (the first label's), under its name
    assert edge[0] > edge[1] + 50  # the box's own line, red
    page.keyboard.press("s")
    expect(page.locator("#message")).to_have_text("Saved 4 annotations.")
    expect(page.locator("#status")).to_have_text("Annotated")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "labelling.png"), full_page=True)

    item = site.api("alice").get(f"/api/v1/labelling/tasks/{site.task}/items/{site.items['a.png']}")
    shapes = {a["kind"]: a for a in item.json["annotations"]}
    assert sorted(shapes) == ["bbox", "class", "point", "polygon"]
    assert (shapes["bbox"]["label"], shapes["polygon"]["label"]) == ("cat", "dog")
    assert (shapes["point"]["label"], shapes["class"]["label"]) == ("cat", "dog")
    assert flat(shapes["bbox"]) == pytest.approx([10, 8, 30, 28], abs=0.2)
    assert flat(shapes["polygon"]) == pytest.approx([40, 5, 60, 5, 60, 25, 40, 25], abs=0.2)
    assert flat(shapes["point"]) == pytest.approx([5, 40], abs=0.2)

    # the reviewer accepts it with a key, then downloads the accepted items as COCO
    page.context.clear_cookies()
    log_in(page, site.url, "erin")
    page.goto(f"{site.url}/labelling/tasks/{site.task}/items/{site.items['a.png']}")
    expect(page.locator("#labeller[data-ready='1']")).to_have_count(1)
    expect(page.locator("#shapes li")).to_have_count(4)
    page.keyboard.press("a")
    expect(page.locator("#status")).to_have_text("Accepted")
    page.goto(f"{site.url}/labelling/tasks/{site.task}")
    expect(page.locator("#progress")).to_contain_text("accepted: 1")
    page.select_option("#export select[name=format]", "coco")
    page.check("#export input[name=only_accepted]")
    with page.expect_download() as info:
        page.click("#export button[type=submit]")
    archive = tmp_path / "export.tar.gz"
    info.value.save_as(archive)
    with tarfile.open(archive) as tar:  # Debian 12's Python 3.11.2 has no extractall(filter=)
        for member in tar.getmembers():
            source = tar.extractfile(member)
            if source is not None:
                target = tmp_path / "out" / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
    coco = COCO(str(tmp_path / "out" / "pets-1-coco" / "annotations.json"))
    assert [i["file_name"] for i in coco.loadImgs(coco.getImgIds())] == ["a.png"]
    anns = coco.loadAnns(coco.getAnnIds())
    assert sorted(a["attributes"]["kind"] for a in anns) == ["bbox", "class", "point", "polygon"]
    box = next(a for a in anns if a["attributes"]["kind"] == "bbox")
    assert box["bbox"] == pytest.approx([10, 8, 20, 20], abs=0.3)
    assert (tmp_path / "out" / "pets-1-coco" / "images" / "a.png").is_file()


def test_save_and_next_takes_the_next_item(page: Page, site: Site) -> None:
    """**n** saves, then takes the next item with a POST (it is held for the annotator: no one
    else is handed it), and opens it."""
    erin = site.api("erin")
    first = erin.get(f"/api/v1/labelling/tasks/{site.task}").json
    body = {k: first[k] for k in ("project_id", "dataset_version_id", "label_set_id")}
    task = erin.post("/api/v1/labelling/tasks", json={**body, "name": "pets-2"}).json["id"]
    items = {i["path"]: i["id"] for i in erin.get(f"/api/v1/labelling/tasks/{task}/items").json}
    log_in(page, site.url, "sam")
    page.goto(f"{site.url}/labelling/tasks/{task}/items/{items['a.png']}")
    expect(page.locator("#labeller[data-ready='1']")).to_have_count(1)
    page.keyboard.press("1")
    page.keyboard.press("c")
    with page.expect_request(lambda r: r.url.endswith("/next")) as asked:
        page.keyboard.press("n")
    assert asked.value.method == "POST"
    page.wait_for_url(f"**/labelling/tasks/{task}/items/{items['b.png']}")
    expect(page.locator("#labeller[data-ready='1']")).to_have_count(1)
    # b.png is sam's now: alice is handed nothing, and a look holds nothing either
    next_url = f"/api/v1/labelling/tasks/{task}/next"
    assert site.api("alice").get(next_url).status_code == 404
    assert site.api("sam").get(next_url).json["path"] == "b.png"
    a = site.api("sam").get(f"/api/v1/labelling/tasks/{task}/items/{items['a.png']}").json
    assert (a["status"], [x["kind"] for x in a["annotations"]]) == ("annotated", ["class"])
