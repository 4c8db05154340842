"""Every /metrics of the daemons wants the scrape token where one is set (given, or
``AIPOOL_METRICS_TOKEN``): without it, or with another, nothing of the registry comes back."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.core import GaugeMetricFamily

from plumbing.address import Address
from plumbing.metrics import SnapshotCollector, registry_of, serve


def _tenant() -> list[GaugeMetricFamily]:
    family = GaugeMetricFamily("aipool_test_cards", "cards per tenant", labels=["tenant"])
    family.add_metric(["vision"], 2.0)
    return [family]


def _get(url: str, headers: dict[str, str]) -> tuple[int, str]:
    r = httpx.get(url, headers=headers, timeout=5)
    return r.status_code, r.text


@pytest.mark.parametrize("from_env", [False, True])
def test_a_scrape_needs_the_token(monkeypatch: pytest.MonkeyPatch, from_env: bool) -> None:
    monkeypatch.setenv("AIPOOL_METRICS_TOKEN", "s3cret" if from_env else "")
    token = None if from_env else "s3cret"
    server = serve(registry_of([SnapshotCollector(_tenant)]), Address("127.0.0.1", 0), token=token)
    assert server is not None
    url = f"http://127.0.0.1:{server.address.port}/metrics"
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            status, body = _get(url, headers)
            assert status == 401, headers
            assert "vision" not in body
        status, body = _get(url, {"Authorization": "Bearer s3cret"})
        assert status == 200
        assert 'aipool_test_cards{tenant="vision"} 2.0' in body
    finally:
        server.close()


def test_without_a_token_it_serves_as_before_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("AIPOOL_METRICS_TOKEN", raising=False)
    server = serve(registry_of([SnapshotCollector(_tenant)]), Address("127.0.0.1", 0))
    assert server is not None
    try:
        assert _get(f"http://127.0.0.1:{server.address.port}/metrics", {})[0] == 200
    finally:
        server.close()
    assert "without a scrape token" in caplog.text
