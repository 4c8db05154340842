"""Models and inference in Debian's headless Chromium, driven by Playwright, in Chinese: a
model version uploaded from the model's page with the browser's progress shown and a file over
the limit refused before it is sent; a digit drawn on white paper sent through a service's
"try it" form and its label shown.

The app runs under waitress on a free local port, on a seeded SQLite file and the fake Slurm
of tests/unit/portal; the service's replica is the real program a replica job runs.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask_migrate import upgrade
from playwright.sync_api import Browser, Page, expect
from sklearn.datasets import load_digits

from portal.extensions import db
from tests.e2e.conftest import serving
from tests.unit.portal.conftest import Env, make_app
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_inference import start_replica
from tests.unit.portal.test_inference_try import drawn_digit
from tests.unit.portal.test_registry import Clock
from tests.unit.portal.test_registry_runs import import_digits, train
from tests.unit.portal.world import PASSWORD, seed_world

SHOTS = Path("/tmp/aipool-portal-e2e")  # screenshots, for a person to look at
LIMIT = 2 * 1024 * 1024


@dataclass
class Site:
    url: str
    env: Env
    model: int
    service: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    import os

    from portal import userfiles

    tmp = tmp_path_factory.mktemp("e2e-models")
    app = make_app(
        tmp / "portal.db",
        tmp,
        MODEL_STORAGE=str(tmp / "store"),
        MODEL_WORK=str(tmp / "work"),
        MODEL_MIRROR=str(tmp / "mirror"),
        MODEL_UPLOAD_MAX_BYTES=LIMIT,
        CLOCK=Clock(),
    )
    with app.app_context():
        upgrade()
        world = seed_world()
    env = Env(app, world, app.config["SLURM"])
    # the replica's files are written by this process, standing in for the job's user
    saved = userfiles.uid_of
    userfiles.uid_of = lambda user: os.getuid()  # type: ignore[assignment]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        model = import_digits(env)
        v2 = train(env, model)
        r = env.api("alice").post("/api/v1/inference", json={"version_id": v2["id"]})
        assert r.status_code == 201, r.json
        reconcile(env)
        job = env.api("alice").get(f"/api/v1/inference/{r.json['id']}").json["replica_jobs"]
        start_replica(env, job[0]["job_id"], procs)
        reconcile(env)
        with serving(app) as url:
            yield Site(url, env, model, r.json["id"])
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
        userfiles.uid_of = saved  # type: ignore[assignment]
        with app.app_context():
            db.engine.dispose()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 1000}, locale="zh-CN")
    p = context.new_page()
    p.set_default_timeout(15_000)
    yield p
    context.close()


def log_in(page: Page, url: str, user: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(lambda u: "/login" not in u)


# what the upload script says, kept on the window (document.open keeps it): the status line's
# every text, in order
WATCH = """() => {
  window.said = [];
  const status = document.querySelector('#upload .upload-status');
  new MutationObserver(() => window.said.push(status.textContent))
    .observe(status, {childList: true, characterData: true, subtree: true});
}"""


def versions(site: Site) -> list[int]:
    rows = site.env.api("alice").get(f"/api/v1/models/{site.model}/versions").json
    return [v["number"] for v in rows]


def test_upload_a_version_with_its_progress(page: Page, site: Site, tmp_path: Path) -> None:
    log_in(page, site.url, "alice")
    page.goto(f"{site.url}/models/{site.model}")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.locator("#upload h3")).to_have_text("上传")
    before = versions(site)
    # over the limit: refused by the page itself, in Chinese, nothing sent
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * (LIMIT + 1))
    page.set_input_files("#upload input[name=file]", str(big))
    page.click("#upload button[type=submit]")
    expect(page.locator("#upload .upload-status")).to_have_text(
        "big.bin 超过了门户接受的 2.0 MiB。"
    )
    assert versions(site) == before
    # a weights file under the limit: sent with its progress, then the page says so
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"\x01" * (LIMIT - 4096))
    page.evaluate(WATCH)
    page.set_input_files("#upload input[name=file]", str(weights))
    page.click("#upload button[type=submit]")
    expect(page.locator("main .flash")).to_contain_text(f"已上传版本 {max(before) + 1}。")
    said: list[str] = page.evaluate("() => window.said")
    assert any(s.startswith("正在上传：") for s in said), said
    assert "已上传，门户正在检查文件…" in said, said
    assert page.url.endswith(f"/models/{site.model}")
    assert versions(site) == [*before, max(before) + 1]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "model-upload-zh.png"), full_page=True)


def test_try_a_service_with_a_drawn_digit(page: Page, site: Site, tmp_path: Path) -> None:
    digits = load_digits()
    log_in(page, site.url, "alice")
    page.goto(f"{site.url}/inference/{site.service}")
    expect(page.locator("#try-it")).to_have_text("在线试用")
    for index in (0, 7):
        image = tmp_path / f"digit-{index}.png"
        image.write_bytes(drawn_digit(index))
        page.set_input_files("#try input[name=pixels]", str(image))
        page.click("#try button[type=submit]")
        expect(page.locator("#answer-rows td.label")).to_have_text(str(digits.target[index]))
    # nothing chosen: the browser asks first; forced past it, the portal says so on the field
    page.eval_on_selector("#try input[name=pixels]", "i => i.removeAttribute('required')")
    page.click("#try button[type=submit]")
    expect(page.locator("#try-pixels-error")).to_have_text("请填写此项。")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "inference-try-zh.png"), full_page=True)
    calls: Any = site.env.api("alice").get(f"/api/v1/inference/{site.service}").json["calls"]
    assert calls == 2
