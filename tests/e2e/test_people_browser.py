"""People and tenants in Debian's headless Chromium: a domain admin whose browser speaks
Chinese creates a user in their domain, who then signs in with the password shown once; the
admin pages (users, roles, groups, domains, quotas, audit) in both languages, for a platform
admin and a domain admin, at desktop and at phone width, screenshots kept for a person.

The portal runs under waitress on a seeded SQLite file and a fake Slurm (tests/unit/portal).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask_migrate import upgrade
from playwright.sync_api import Browser, Page, expect

from portal.extensions import db
from tests.e2e.conftest import serving
from tests.unit.portal.conftest import make_app
from tests.unit.portal.world import PASSWORD, seed_world

SHOTS = Path("/tmp/aipool-portal-e2e/people")
PAGES = ("/users", "/roles", "/groups", "/domains", "/quotas?policy=1", "/audit")
PHONE = {"width": 400, "height": 860}


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("e2e-people")
    app = make_app(tmp / "portal.db", tmp)
    with app.app_context():
        upgrade()
        seed_world()
    with serving(app) as url:
        yield url
    with app.app_context():
        db.engine.dispose()


def open_page(browser: Browser, locale: str, **options: object) -> Page:
    context = browser.new_context(locale=locale, **options)  # type: ignore[arg-type]
    page = context.new_page()
    page.set_default_timeout(10_000)
    return page


def log_in(page: Page, base_url: str, user: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")
    expect(page).to_have_url(f"{base_url}/")


def test_a_domain_admin_creates_a_user_in_chinese(browser: Browser, base_url: str) -> None:
    page = open_page(browser, "zh-CN")
    log_in(page, base_url, "tina")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    page.click('nav >> text="用户"')
    expect(page.locator("h1")).to_have_text("用户")
    page.click("main >> text=新建用户")
    expect(page.locator("h1")).to_have_text("新建用户")
    options = page.locator("select[name=project_id] option").all_text_contents()
    assert options == ["cs101"]  # tina's domain only; no "no project" choice for her
    expect(page.locator("input[name=is_platform_admin]")).to_have_count(0)
    page.fill("input[name=username]", "wangfang")
    page.fill("input[name=display_name]", "王芳")
    page.fill("input[name=email]", "wangfang@example.edu.cn")
    page.select_option("select[name=role_id]", label="成员")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "user-new-zh.png"), full_page=True)
    page.click("main button[type=submit]")
    expect(page.locator("h1")).to_have_text("已创建用户 wangfang")
    password = page.locator("code.password").inner_text().strip()
    assert len(password) >= 12
    page.screenshot(path=str(SHOTS / "user-created-zh.png"), full_page=True)
    page.click("text=查看 wangfang 的账号")
    expect(page.locator("main table").first).to_contain_text("cs101")
    expect(page.locator("main table").first).to_contain_text("成员")
    page.context.close()
    # the new user signs in with the password shown once, and is a member of cs101
    newcomer = open_page(browser, "zh-CN")
    log_in(newcomer, base_url, "wangfang", password)
    newcomer.goto(f"{base_url}/projects")
    expect(newcomer.locator("main table a")).to_have_text(["cs101"])
    newcomer.context.close()


def test_a_wrong_field_is_said_in_chinese_and_creates_nothing(
    browser: Browser, base_url: str
) -> None:
    page = open_page(browser, "zh-CN")
    log_in(page, base_url, "tina")
    page.goto(f"{base_url}/users/new")
    page.fill("input[name=username]", "Bad Name")
    page.click("main button[type=submit]")
    expect(page.locator(".error").first).to_contain_text("Unix 用户名")
    page.goto(f"{base_url}/users?q=Bad")
    expect(page.locator("main tbody")).to_contain_text("没有符合条件的用户")
    page.context.close()


@pytest.mark.parametrize("user", ["admin", "erin"])
@pytest.mark.parametrize("locale", ["zh-CN", "en-US"])
def test_the_admin_pages_at_desktop_and_phone_width(
    browser: Browser, base_url: str, user: str, locale: str
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for size, viewport in (("desktop", {"width": 1280, "height": 900}), ("phone", PHONE)):
        page = open_page(browser, locale, viewport=viewport)
        log_in(page, base_url, user)
        for path in PAGES:
            response = page.goto(f"{base_url}{path}")
            assert response is not None
            assert response.status == 200, path
            expect(page.locator("h1")).to_be_visible()
            name = re.sub(r"\W+", "-", path.strip("/")).strip("-")
            page.screenshot(path=str(SHOTS / f"{name}-{user}-{locale}-{size}.png"), full_page=True)
            if size == "phone":  # nothing wider than the screen: wide tables scroll inside
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= PHONE["width"], (path, width)
        page.context.close()
