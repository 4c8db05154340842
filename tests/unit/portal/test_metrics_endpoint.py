"""The portal's /metrics: requests and latency per route, only for a configured scraper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from portal.metrics import parse_allow
from tests.unit.portal.conftest import make_app

TOKEN = "s3cret-scrape-token"


def app_with(tmp_path: Path, **settings: Any) -> Flask:
    return make_app(tmp_path / "portal.db", tmp_path, **settings)


def families(text: str) -> dict[str, list[Any]]:
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_off_unless_configured(tmp_path: Path) -> None:
    client = app_with(tmp_path).test_client()
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_token_counts_and_latency(tmp_path: Path) -> None:
    client = app_with(tmp_path, METRICS_TOKEN=TOKEN).test_client()
    client.get("/favicon.ico").close()
    client.get("/no/such/page")
    client.get("/no/such/page")
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403
    assert wrong.get_json()["error"] == "forbidden"
    assert client.get("/metrics").status_code == 403  # no token at all
    ok = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert ok.mimetype == "text/plain"
    fam = families(ok.get_data(as_text=True))
    counts = {
        (s.labels["endpoint"], s.labels["method"], s.labels["status"]): s.value
        for s in fam["aipool_portal_requests"]
        if s.name == "aipool_portal_requests_total"
    }
    assert counts[("none", "GET", "4xx")] == 2
    assert counts[("metrics", "GET", "4xx")] == 2
    assert counts[("favicon", "GET", "2xx")] == 1
    buckets = [
        s
        for s in fam["aipool_portal_request_seconds"]
        if s.name.endswith("_count") and s.labels["endpoint"] == "none"
    ]
    assert [b.value for b in buckets] == [2]
    inf = [
        s
        for s in fam["aipool_portal_request_seconds"]
        if s.name.endswith("_bucket")
        and s.labels == {"endpoint": "none", "method": "GET", "le": "+Inf"}
    ]
    assert [b.value for b in inf] == [2]


def test_no_session_cookie_and_no_login(tmp_path: Path) -> None:
    client = app_with(tmp_path, METRICS_TOKEN=TOKEN).test_client()
    ok = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200
    assert "Set-Cookie" not in ok.headers


def test_allow_list(tmp_path: Path) -> None:
    client = app_with(tmp_path, METRICS_ALLOW=["10.1.0.0/16", "::1"]).test_client()
    outside = client.get("/metrics", environ_base={"REMOTE_ADDR": "10.2.0.1"})
    assert outside.status_code == 403
    assert outside.get_json()["error"] == "forbidden"
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "10.1.7.9"}).status_code == 200
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200


def test_token_and_list_both_needed_when_both_set(tmp_path: Path) -> None:
    client = app_with(tmp_path, METRICS_TOKEN=TOKEN, METRICS_ALLOW="127.0.0.1").test_client()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/metrics", headers=auth).status_code == 200  # test client: 127.0.0.1
    far = {"REMOTE_ADDR": "192.0.2.1"}
    assert client.get("/metrics", headers=auth, environ_base=far).status_code == 403
    assert client.get("/metrics").status_code == 403


def test_registry_is_the_portals_own(tmp_path: Path) -> None:
    from prometheus_client import REGISTRY

    app_with(tmp_path, METRICS_TOKEN=TOKEN)
    assert "aipool_portal_requests" not in {m.name for m in REGISTRY.collect()}


def test_allow_list_parsing() -> None:
    assert [str(n) for n in parse_allow("10.0.0.5, 192.168.1.0/24")] == [
        "10.0.0.5/32",
        "192.168.1.0/24",
    ]
    assert parse_allow(None) == ()
    with pytest.raises(ValueError, match=r"not an IP address or network: 'example\.org'"):
        parse_allow(["example.org"])


def test_bad_allow_list_stops_the_portal(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="METRICS_ALLOW"):
        app_with(tmp_path, METRICS_ALLOW=["nonsense"])
