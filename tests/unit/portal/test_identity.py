"""Identity: tokens, password change and reset, CSRF on session calls, rate-limited login."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from werkzeug.test import TestResponse

from portal.extensions import db
from portal.identity.models import ApiToken, User
from tests.unit.portal.conftest import Env, make_app
from tests.unit.portal.test_pages import csrf_of, login
from tests.unit.portal.world import PASSWORD


def test_token_exchange_and_use(env: Env) -> None:
    client = env.app.test_client()
    r = client.post("/api/v1/auth/token", json={"username": "bob", "password": PASSWORD})
    assert r.status_code == 201, r.json
    secret = r.json["token"]
    assert secret.startswith("aip_")
    me = client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.json["username"] == "bob"
    with env.app.app_context():
        stored = db.session.scalars(select(ApiToken.token_hash)).all()
    assert secret not in stored  # only the hash is kept
    bad = client.post("/api/v1/auth/token", json={"username": "bob", "password": "wrong"})
    assert bad.status_code == 401
    assert (
        client.get("/api/v1/auth/me", headers={"Authorization": "Bearer aip_nope"}).status_code
        == 401
    )


def test_tokens_list_create_revoke(env: Env) -> None:
    api = env.api("alice")
    r = api.post("/api/v1/auth/tokens", json={"name": "ci", "days": 1})
    assert r.status_code == 201
    new_id, secret = r.json["id"], r.json["token"]
    listed = api.get("/api/v1/auth/tokens").json
    assert {t["name"] for t in listed} == {"tests", "ci"}
    assert all("token" not in t for t in listed)
    # another user cannot revoke it, and it reads as missing to them
    assert env.api("bob").delete(f"/api/v1/auth/tokens/{new_id}").status_code == 404
    assert api.delete(f"/api/v1/auth/tokens/{new_id}").status_code == 204
    client = env.app.test_client()
    assert (
        client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {secret}"}).status_code
        == 401
    )


def test_password_change_and_admin_reset(env: Env) -> None:
    api = env.api("dave")
    r = api.post(
        "/api/v1/auth/password",
        json={"current_password": "wrong", "new_password": "a long new one"},
    )
    assert r.status_code == 403
    assert r.json["message"] == "The current password is wrong."
    r = api.post(
        "/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": "short"}
    )
    assert r.status_code == 422
    assert "new_password" in r.json["errors"]["json"]
    r = api.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": "a long new one"},
    )
    assert r.status_code == 204
    client = env.app.test_client()
    ok = client.post("/api/v1/auth/token", json={"username": "dave", "password": "a long new one"})
    assert ok.status_code == 201
    r = env.api("admin").post(f"/api/v1/users/{env.world.users['dave']}/password", json={})
    assert r.status_code == 200
    reset = r.json["password"]
    assert (
        client.post("/api/v1/auth/token", json={"username": "dave", "password": reset}).status_code
        == 201
    )


def test_password_change_ends_other_sessions(env: Env) -> None:
    first = login(env, "carol")
    second = login(env, "carol")
    page = second.get("/account/password").get_data(as_text=True)
    r = second.post(
        "/account/password",
        data={
            "csrf_token": csrf_of(page),
            "current_password": PASSWORD,
            "new_password": "another long one",
        },
    )
    assert r.status_code == 302
    assert second.get("/").status_code == 200  # this session was renewed
    assert first.get("/").status_code == 302  # the other one is signed out


def test_session_api_calls_need_csrf(env: Env) -> None:
    client = login(env, "alice")
    assert client.get("/api/v1/auth/me").json["username"] == "alice"
    r = client.post("/api/v1/auth/tokens", json={"name": "x"})
    assert r.status_code == 400  # a session write without the CSRF token
    token = csrf_of(client.get("/login").get_data(as_text=True))
    r = client.post("/api/v1/auth/tokens", json={"name": "x"}, headers={"X-CSRFToken": token})
    assert r.status_code == 201


def test_a_bearer_call_ignores_the_session_cookie(env: Env) -> None:
    client = login(env, "alice")
    r = client.post(
        "/api/v1/auth/tokens", json={"name": "x"}, headers={"Authorization": "Bearer aip_forged"}
    )
    assert r.status_code == 401


def test_inactive_users_cannot_log_in(env: Env) -> None:
    r = env.api("admin").patch(f"/api/v1/users/{env.world.users['bob']}", json={"active": False})
    assert r.status_code == 200
    client = env.app.test_client()
    assert (
        client.post(
            "/api/v1/auth/token", json={"username": "bob", "password": PASSWORD}
        ).status_code
        == 401
    )
    assert env.api("bob").get("/api/v1/auth/me").status_code == 401


def test_users_can_edit_their_own_name_only(env: Env) -> None:
    me = env.world.users["alice"]
    assert (
        env.api("alice")
        .patch(f"/api/v1/users/{me}", json={"display_name": "A."})
        .json["display_name"]
        == "A."
    )
    r = env.api("alice").patch(f"/api/v1/users/{me}", json={"is_platform_admin": True})
    assert r.status_code == 403
    admin = env.world.users["admin"]
    r = env.api("admin").patch(f"/api/v1/users/{admin}", json={"is_platform_admin": False})
    assert r.status_code == 409


def test_create_user_generates_a_password_once(env: Env) -> None:
    r = env.api("admin").post("/api/v1/users", json={"username": "newbie"})
    assert r.status_code == 201
    assert len(r.json["password"]) >= 10
    r = env.api("admin").post(
        "/api/v1/users", json={"username": "given", "password": "given password 1"}
    )
    assert r.json["password"] is None
    assert env.api("admin").post("/api/v1/users", json={"username": "given"}).status_code == 409
    r = env.api("admin").post("/api/v1/users", json={"username": "Bad Name"})
    assert r.status_code == 422
    assert "username" in r.json["errors"]["json"]


def test_login_is_rate_limited(tmp_path: Path, seeded_db: tuple[Path, object]) -> None:
    import shutil

    path = tmp_path / "rl.db"
    shutil.copyfile(seeded_db[0], path)
    app = make_app(path, tmp_path, LOGIN_RATE_LIMIT="3 per minute")
    client = app.test_client()
    answers = [
        client.post("/api/v1/auth/token", json={"username": "bob", "password": "x"})
        for _ in range(4)
    ]
    assert [r.status_code for r in answers] == [401, 401, 401, 429]
    limited = answers[-1]
    assert int(limited.headers["Retry-After"]) > 0  # when to try again
    assert limited.json["error"] == "too_many_requests"
    assert limited.json["message"] == (
        "Too many sign-ins from this address (3 per minute): wait, then try again."
    )
    with app.app_context():
        assert db.session.scalar(select(User.id).where(User.username == "bob"))
        db.engine.dispose()


def test_an_account_is_locked_after_failed_sign_ins_from_any_address(
    tmp_path: Path, seeded_db: tuple[Path, object]
) -> None:
    import shutil

    path = tmp_path / "lock.db"
    shutil.copyfile(seeded_db[0], path)
    app = make_app(path, tmp_path, ACCOUNT_LOCKOUT="3 per 15 minutes")
    client = app.test_client()

    def token(user: str, password: str, address: str) -> TestResponse:
        body = {"username": user, "password": password}
        return client.post("/api/v1/auth/token", json=body, environ_base={"REMOTE_ADDR": address})

    # a right password does not count; three wrong ones from three addresses do
    assert token("bob", PASSWORD, "10.0.0.9").status_code == 201
    assert [token("bob", "wrong", f"10.0.0.{i}").status_code for i in (1, 2, 3)] == [401] * 3
    locked = token("bob", PASSWORD, "10.0.0.4")  # even with the right password
    assert locked.status_code == 429
    assert "Too many failed sign-ins for this account" in locked.json["message"]
    assert int(locked.headers["Retry-After"]) > 0
    # the sign-in page too, under the same account, whatever the case of its name
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    form = {"username": "BOB", "password": PASSWORD, "csrf_token": csrf}
    page = client.post("/login", data=form)
    assert page.status_code == 429
    # the sign-in page again, saying why and when
    assert "Too many failed sign-ins for this account" in page.get_data(as_text=True)
    assert 'name="username"' in page.get_data(as_text=True)
    assert int(page.headers["Retry-After"]) > 0
    assert token("alice", PASSWORD, "10.0.0.1").status_code == 201  # others are not locked
    with app.app_context():
        db.engine.dispose()


def test_account_lockout_can_be_turned_off(tmp_path: Path, seeded_db: tuple[Path, object]) -> None:
    import shutil

    path = tmp_path / "nolock.db"
    shutil.copyfile(seeded_db[0], path)
    app = make_app(path, tmp_path, ACCOUNT_LOCKOUT=None)
    client = app.test_client()
    for _ in range(5):
        r = client.post("/api/v1/auth/token", json={"username": "carol", "password": "wrong"})
        assert r.status_code == 401
    body = {"username": "carol", "password": PASSWORD}
    assert client.post("/api/v1/auth/token", json=body).status_code == 201
    with app.app_context():
        db.engine.dispose()
