"""The portal in Debian's headless Chromium, driven by Playwright: log in, read the
dashboard, submit a job from the form, cancel it; the admin previews the Slurm sync.

The app runs under waitress on a free local port, on a seeded SQLite file and a fake Slurm
(tests/unit/portal). Needs ``apt-get install -y chromium`` and the ``playwright`` package (its
own browser downloads are not used).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask_migrate import upgrade
from playwright.sync_api import Browser, Page, expect

from portal.extensions import db
from tests.e2e.conftest import serving
from tests.unit.portal.conftest import make_app
from tests.unit.portal.world import PASSWORD, seed_world

SHOTS = Path("/tmp/aipool-portal-e2e")  # screenshots, for a person to look at


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("e2e")
    app = make_app(tmp / "portal.db", tmp)
    with app.app_context():
        upgrade()
        seed_world()
    with serving(app) as url:
        yield url
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(10_000)
    yield p
    context.close()


def log_in(page: Page, base_url: str, user: str) -> None:
    page.goto(f"{base_url}/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    expect(page.locator("h1")).to_have_text("Dashboard")


def test_member_submits_and_cancels_a_job(page: Page, base_url: str) -> None:
    log_in(page, base_url, "alice")
    expect(page.locator("section.card h2").first).to_contain_text("Compute pool")
    expect(page.locator("svg[role=img]").first).to_be_visible()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)
    page.click("text=Submit a job")
    page.select_option("select[name=project_id]", label="nlp")
    page.fill("input[name=name]", "browser-job")
    page.fill("input[name=shards]", "8")
    page.fill("input[name=time_limit]", "5")
    page.click("main button[type=submit]")
    expect(page.locator("h1")).to_contain_text("browser-job")
    expect(page.locator("#state")).to_have_attribute("data-state", "PENDING")
    expect(page.locator("#state")).to_have_text("Pending")
    page.screenshot(path=str(SHOTS / "job.png"), full_page=True)
    page.click("text=Cancel job")  # asks first, on a page of its own
    expect(page.locator("h1")).to_contain_text("Cancel job")
    page.screenshot(path=str(SHOTS / "job-cancel.png"), full_page=True)
    page.click("text=Yes, cancel the job")
    expect(page.locator(".flash")).to_contain_text("cancelled")
    expect(page.locator("#state")).to_have_attribute("data-state", "CANCELLED")
    first = page.url
    page.click("text=Run again")  # the stored request, submitted again as alice
    expect(page.locator(".flash")).to_contain_text("submitted again")
    expect(page.locator("#state")).to_have_attribute("data-state", "PENDING")
    assert page.url != first
    expect(page.locator("#util-summary")).to_contain_text("No utilisation samples")
    page.goto(f"{base_url}/jobs/history")
    expect(page.locator("table tr")).to_have_count(3)  # the header, the job and its re-run
    page.screenshot(path=str(SHOTS / "history.png"), full_page=True)


def test_foreign_projects_are_not_found(page: Page, base_url: str) -> None:
    log_in(page, base_url, "bob")
    page.click("nav >> text=Projects")
    expect(page.locator("table a")).to_have_text(["vision"])
    response = page.goto(f"{base_url}/projects/2")  # nlp: another tenant's project
    assert response is not None
    assert response.status == 404


def test_admin_previews_the_slurm_sync(page: Page, base_url: str) -> None:
    log_in(page, base_url, "admin")
    page.click("nav >> text=Quotas")
    page.click("text=Preview the sync")
    page.click("text=The sacctmgr commands")  # the commands, folded for experts
    expect(page.locator("pre")).to_contain_text("add user")
    expect(page.locator("text=Apply to Slurm")).to_be_visible()
    page.click("text=Preview the policy")
    expect(page.locator("#policy-state")).to_contain_text("Not installed yet")
    expect(page.locator("table.policy-table").first).to_contain_text("cs101")
    page.click("text=Install the policy")
    expect(page.locator(".flash")).to_contain_text("is installed")
    page.screenshot(path=str(SHOTS / "quotas.png"), full_page=True)


def test_wrong_password_stays_on_login(page: Page, base_url: str) -> None:
    page.goto(f"{base_url}/login")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "not the password")
    page.click("main button[type=submit]")
    expect(page.locator(".flash.error")).to_contain_text("Wrong user name or password")
