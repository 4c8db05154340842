"""``aipool portal``: migrates, seeds the demo tenants once and serves the app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from portal.cli import portal


def test_portal_command_migrates_seeds_and_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[dict[str, Any]] = []
    monkeypatch.setattr("portal.asgi.serve", lambda app, **kw: served.append({"app": app, **kw}))
    monkeypatch.setenv("AIPOOL_DATABASE_URL", f"sqlite:///{tmp_path}/demo.db")
    monkeypatch.setenv("AIPOOL_SECRET_KEY", "s3cret")
    monkeypatch.setenv("AIPOOL_DEMO_PASSWORD_ALICE", "alice password")
    monkeypatch.setenv("AIPOOL_DEMO_PASSWORD_CAROL", "carol password")
    runner = CliRunner()
    result = runner.invoke(portal, ["--demo", "--port", "8099"])
    assert result.exit_code == 0, result.output
    assert "demo user alice: alice password" in result.output
    assert "demo user admin: " in result.output
    assert served[0]["port"] == 8099
    assert served[0]["host"] == "127.0.0.1"
    client = served[0]["app"].test_client()
    r = client.post("/api/v1/auth/token", json={"username": "alice", "password": "alice password"})
    assert r.status_code == 201
    token = r.json["token"]
    projects = client.get("/api/v1/projects", headers={"Authorization": f"Bearer {token}"}).json
    assert [p["name"] for p in projects] == ["nlp"]
    assert "demo billing account nlp on the standard plan" in result.output
    billing = client.get("/api/v1/usage/billing/nlp", headers={"Authorization": f"Bearer {token}"})
    assert billing.status_code == 200  # a member sees the project's balance and this month
    assert (billing.json["full"], billing.json["bills"], billing.json["ledger"]) == (False, [], [])
    r = client.post("/api/v1/auth/token", json={"username": "carol", "password": "carol password"})
    carol = {"Authorization": f"Bearer {r.json['token']}"}
    cs101 = client.get("/api/v1/usage/billing/cs101", headers=carol).json  # cs101's manager
    assert (cs101["plan"], cs101["package"], cs101["balance"]) == ("standard", None, "1000")
    # a second start creates nothing and prints no password
    again = runner.invoke(portal, ["--demo"])
    assert again.exit_code == 0, again.output
    assert "demo user" not in again.output
    assert "demo billing account" not in again.output
