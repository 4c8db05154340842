"""Sessions and tokens end on the server: a cookie replayed after sign-out, and every cookie
and token of a user after a password change, an admin's reset or deactivation, is refused."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login
from tests.unit.portal.world import PASSWORD


def _cookie(client: FlaskClient) -> str:
    cookie = client.get_cookie("session")
    assert cookie is not None
    return cookie.value


def _replay(env: Env, cookie: str) -> FlaskClient:
    """A new client (another browser, or a thief) presenting a copied session cookie."""
    other = env.app.test_client()
    other.set_cookie("session", cookie)
    return other


def _signed_in(client: FlaskClient) -> bool:
    return client.get("/api/v1/auth/me").status_code == 200


def _token(env: Env, who: str) -> dict[str, str]:
    r = env.app.test_client().post(
        "/api/v1/auth/token", json={"username": who, "password": PASSWORD, "name": "script"}
    )
    assert r.status_code == 201, r.json
    return {"Authorization": f"Bearer {r.json['token']}"}


def test_a_cookie_replayed_after_sign_out_is_refused(env: Env) -> None:
    alice = login(env, "alice")
    copied = _cookie(alice)
    assert _signed_in(_replay(env, copied))
    token = csrf_of(alice.get("/").get_data(as_text=True))
    assert alice.post("/logout", data={"csrf_token": token}).status_code == 302
    assert not _signed_in(alice)
    assert not _signed_in(_replay(env, copied))
    assert _signed_in(login(env, "alice"))  # signing in again works


def test_a_password_change_ends_every_other_session_and_token(env: Env) -> None:
    alice, laptop = login(env, "alice"), login(env, "alice")
    api = _token(env, "alice")
    client = env.app.test_client()
    assert client.get("/api/v1/auth/me", headers=api).status_code == 200
    page = alice.get("/account/password").get_data(as_text=True)
    r = alice.post(
        "/account/password",
        data={
            "current_password": PASSWORD,
            "new_password": "a much longer new secret",
            "csrf_token": csrf_of(page),
        },
    )
    assert r.status_code == 302, r.get_data(as_text=True)
    assert _signed_in(alice)  # this browser got a new session
    assert not _signed_in(laptop)
    assert client.get("/api/v1/auth/me", headers=api).status_code == 401


def test_an_admin_reset_and_deactivation_end_cookies_and_tokens(env: Env) -> None:
    admin = env.api("admin")
    for who, change in (("bob", {"reset": {}}), ("carol", {"active": False})):
        browser = login(env, who)
        api = _token(env, who)
        user_id = env.world.users[who]
        if "reset" in change:
            r = admin.post(f"/api/v1/users/{user_id}/password", json={})
        else:
            r = admin.patch(f"/api/v1/users/{user_id}", json=change)
        assert r.status_code == 200, r.json
        assert not _signed_in(browser), who
        assert env.app.test_client().get("/api/v1/auth/me", headers=api).status_code == 401
        if "active" in change:  # reactivated, the old cookie and token stay ended
            assert admin.patch(f"/api/v1/users/{user_id}", json={"active": True}).status_code == 200
            assert not _signed_in(browser)
            assert env.app.test_client().get("/api/v1/auth/me", headers=api).status_code == 401


def test_common_and_personal_passwords_are_refused(env: Env) -> None:
    admin = env.api("admin")
    user_id = env.world.users["bob"]
    for weak in ("password123", "qwertyuiop", "1234567890", "bobbobbob1"):
        r = admin.post(f"/api/v1/users/{user_id}/password", json={"password": weak})
        assert r.status_code == 422, weak
        assert "Too easy to guess" in r.json["errors"]["json"]["password"][0], weak
    r = admin.post(f"/api/v1/users/{user_id}/password", json={"password": "violet kettle drums"})
    assert r.status_code == 200


def _set_cookie_after_sign_in(env: Env, base_url: str) -> str:
    client = env.app.test_client()
    page = client.get("/login", base_url=base_url).get_data(as_text=True)
    form = {"username": "alice", "password": PASSWORD, "csrf_token": csrf_of(page)}
    r = client.post("/login", data=form, base_url=base_url)
    assert r.status_code == 302
    return ";".join(v for k, v in r.headers.items() if k == "Set-Cookie")


def test_the_session_cookie_is_secure_exactly_over_https(env: Env) -> None:
    assert "Secure" in _set_cookie_after_sign_in(env, "https://portal.example.edu")
    assert "Secure" not in _set_cookie_after_sign_in(env, "http://127.0.0.1")
    env.app.config["SESSION_COOKIE_SECURE"] = True  # a site may insist
    try:
        assert "Secure" in _set_cookie_after_sign_in(env, "http://127.0.0.1")
    finally:
        env.app.config["SESSION_COOKIE_SECURE"] = None
