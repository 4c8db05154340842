"""The main command's services: the portal (and the policy daemon) beside the lab."""

from __future__ import annotations

import httpx
import pytest

from aipool.lab import services
from aipool.lab.cluster import Lab
from aipool.lab.config import DEFAULT_ROOT

pytestmark = pytest.mark.slurm


def test_services_start_with_demo_logins_and_stop(lab: Lab) -> None:
    try:
        info = services.up(lab, port=lab.cfg.ports.portal + 10000)
        expected = {"token-service", "portal", "accounting-import", "reconciler"}
        if lab.cfg.root == DEFAULT_ROOT:
            agents = {f"agent-{n.name}" for n in lab.inventory().nodes}
            expected |= {"policy-daemon", "health-checker", *agents}
        status = lab.status()["daemons"]
        assert set(status) >= expected
        assert all(status[name]["running"] for name in expected), status
        assert lab.is_up()
        logins = dict(line.split(" ", 1) for line in info.passwords_file.read_text().splitlines())
        assert info.passwords_file.stat().st_mode & 0o077 == 0
        resp = httpx.post(
            f"{info.portal_url}/api/v1/auth/token",
            json={"username": "alice", "password": logins["alice"]},
            timeout=10,
        )
        assert resp.status_code in (200, 201), resp.text
        assert resp.json()["token"]
        again = services.up(lab, port=lab.cfg.ports.portal + 10000)
        assert again.started == ()
    finally:
        stopped = services.down(lab)
    assert "portal" in stopped
    assert set(stopped) >= {"portal", "accounting-import", "reconciler"}
    # the token service stays, as slurmrestd does: other portals on the lab ask it for tokens
    running = {n for n, d in lab.status()["daemons"].items() if d["running"]}
    assert set(services.SERVICES) & running == {services.TOKEN_SERVICE}
    assert not any(n.startswith("agent-") for n in lab.status()["daemons"])
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{info.portal_url}/login", timeout=2)
