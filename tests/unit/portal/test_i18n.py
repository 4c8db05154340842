"""Simplified Chinese and English: the catalogue is complete, templates hold no text outside
it, and each request gets the language its reader chose (saved, cookie, browser, site)."""

from __future__ import annotations

import importlib.util
import re
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

from portal.i18n import money, translate_message, translate_messages
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login

TOP = Path(__file__).resolve().parents[3]


def _i18n_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("i18n_script", TOP / "scripts" / "i18n.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_chinese_catalogue_is_complete_and_every_template_text_is_in_it() -> None:
    """Nothing untranslated or fuzzy; every marked message of the sources is in the catalogue
    (and nothing stale); the compiled file matches; no template shows text outside it."""
    problems = _i18n_script().problems()
    assert problems == [], "\n".join(problems[:40]) + f"\n… {len(problems)} in all"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("<p>Hello</p>", ["Hello"]),
        ("<p>{{ _('Hello') }}</p>", []),
        ('<button title="Close">{{ _("x") }}</button>', ["Close"]),
        ("<td>{{ job.state or 'Not yet' }}</td>", ["Not yet"]),
        ("<a href=\"{{ url_for('jobs.index') }}\">{{ _('Jobs') }}</a>", []),
        ("{% trans n=3 %}{{ n }} jobs{% endtrans %}", []),
        ("<td>GPU</td><td>{{ n }} MiB</td>", []),
        ("<script>var a = 'Hello there';</script>", []),
        ('<input type="submit" value="Save">', ["Save"]),
        ("{# a comment in English #}<p>{{ x }}</p>", []),
    ],
)
def test_the_template_check_finds_text_outside_the_catalogue(source: str, found: list[str]) -> None:
    assert _i18n_script().untranslated_in(source) == found


def _nav(html: str) -> str:
    m = re.search(r"<nav.*?</nav>", html, re.S)
    assert m, "no navigation on the page"
    return m.group(0)


def test_the_browser_language_is_used_until_the_user_chooses(env: Env) -> None:
    client = login(env, "alice")
    zh = client.get("/jobs", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    page = zh.get_data(as_text=True)
    assert '<html lang="zh-CN">' in page
    assert "作业" in _nav(page)
    assert "Jobs" not in _nav(page)
    en = client.get("/jobs", headers={"Accept-Language": "en-GB,en;q=0.9"}).get_data(as_text=True)
    assert '<html lang="en">' in en
    assert ">Jobs<" in _nav(en)


def test_a_saved_choice_wins_over_the_browser(env: Env) -> None:
    client = login(env, "alice")
    page = client.get("/jobs").get_data(as_text=True)
    r = client.post(
        "/language",
        data={"language": "zh_CN", "next": "/jobs?page=2", "csrf_token": csrf_of(page)},
    )
    assert r.status_code == 302
    assert r.headers["Location"].endswith("/jobs?page=2")
    english_browser = {"Accept-Language": "en"}
    assert "作业" in _nav(client.get("/jobs", headers=english_browser).get_data(as_text=True))
    # saved on the user: another browser of alice's, without the cookie, speaks Chinese too
    other = login(env, "alice")
    other.delete_cookie("aipool_lang")
    assert '<html lang="zh-CN">' in other.get("/jobs", headers=english_browser).get_data(
        as_text=True
    )
    # and bob, who chose nothing, still gets his browser's language
    assert '<html lang="en">' in login(env, "bob").get("/jobs", headers=english_browser).get_data(
        as_text=True
    )


def test_the_switcher_refuses_other_languages_and_other_sites(env: Env) -> None:
    client = env.app.test_client()
    token = csrf_of(client.get("/login").get_data(as_text=True))
    assert client.post("/language", data={"language": "fr", "csrf_token": token}).status_code == 400
    r = client.post(
        "/language",
        data={"language": "zh_CN", "next": "//evil.example/", "csrf_token": token},
    )
    assert r.status_code == 302
    assert "evil" not in r.headers["Location"]
    assert "登录" in client.get("/login").get_data(as_text=True)  # the visitor's cookie
    assert client.post("/language", data={"language": "en"}).status_code == 400  # no CSRF


def test_the_sites_default_language_applies_when_the_browser_says_nothing(env: Env) -> None:
    env.app.config["BABEL_DEFAULT_LOCALE"] = "zh_CN"
    env.app.config["DEFAULT_LOCALE"] = "zh_CN"
    try:
        page = env.app.test_client().get("/login").get_data(as_text=True)
        assert '<html lang="zh-CN">' in page
    finally:
        env.app.config["BABEL_DEFAULT_LOCALE"] = "en"
        env.app.config["DEFAULT_LOCALE"] = "en"


def test_api_errors_speak_the_readers_language(env: Env) -> None:
    zh = {"Accept-Language": "zh-CN"}
    r = env.api("alice").post("/api/v1/jobs", json={"name": "x"}, headers=zh)
    assert r.status_code == 422
    assert "缺少必填字段。" in str(r.json["errors"])
    r = env.api("alice").get("/api/v1/no-such-thing", headers=zh)
    assert r.status_code == 404
    assert "服务器上未找到" in r.json["message"]
    r = env.api("alice").post("/api/v1/jobs", json={"name": "x"})
    assert "Missing data for required field." in str(r.json["errors"])


def test_library_messages_are_translated_with_their_values(env: Env) -> None:
    with env.app.test_request_context(headers={"Accept-Language": "zh-CN"}):
        assert translate_message("Must be one of: a, b.") == "必须是以下之一：a, b。"
        assert translate_message("Longer than maximum length 64.") == "长度不能超过 64。"
        assert translate_messages({"json": {"x": ["Not a valid integer."]}}) == {
            "json": {"x": ["不是有效的整数。"]}
        }
        assert translate_message("something of our own") == "something of our own"
        assert money(Decimal("1234.5")) == "¥1,234.50"
    with env.app.test_request_context(headers={"Accept-Language": "en"}):
        assert money(Decimal("1234.5")) == "CN¥1,234.50"
        assert translate_message("Must be one of: a, b.") == "Must be one of: a, b."
