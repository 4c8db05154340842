from tests.unit.portal.conftest import Env


def test_me(env: Env) -> None:
    r = env.api("alice").get("/api/v1/auth/me")
    assert r.status_code == 200, r.json
    assert r.json["username"] == "alice"
    r = env.api("alice").get("/api/v1/projects")
    assert [p["name"] for p in r.json] == ["nlp"]
