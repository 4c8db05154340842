"""The metrics scheme and the server: names, addresses, serving only when configured."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterable

import pytest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from plumbing.address import Address, parse_address
from plumbing.metrics import SnapshotCollector, name, registry_of, serve


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9101", Address("127.0.0.1", 9101)),
        ("[::1]:9101", Address("::1", 9101)),
        ("localhost:0", Address("localhost", 0)),
        (" 10.0.0.5:80 ", Address("10.0.0.5", 80)),
    ],
)
def test_addresses(text: str, expected: Address) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("9101", "host:port"),
        ("", "host:port"),
        (9101, "host:port"),
        ("127.0.0.1:70000", "port out of range"),
        ("example.org:9101", "not an IP address"),
        ("0.0.0.0:x", "host:port"),
    ],
)
def test_bad_addresses_say_why(text: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_address(text)


def test_names_follow_the_scheme() -> None:
    assert name("pool", "cards") == "aipool_pool_cards"
    for bad in (("Pool",), ("pool", ""), ("pool-cards",)):
        with pytest.raises(ValueError, match="scheme"):
            name(*bad)


def _one() -> Iterable[Metric]:
    g = GaugeMetricFamily("aipool_test_ratio", "A test.", labels=["cluster"])
    g.add_metric(["lab"], 0.5)
    return [g]


def _broken() -> Iterable[Metric]:
    raise RuntimeError("snapshot unreadable")


def test_nothing_is_served_without_an_address() -> None:
    assert serve(registry_of([SnapshotCollector(_one)]), None) is None


def test_a_served_registry_parses_and_a_failing_collector_spoils_nothing() -> None:
    registry = registry_of([SnapshotCollector(_one), SnapshotCollector(_broken)])
    server = serve(registry, Address("127.0.0.1", 0))
    assert server is not None
    try:
        assert server.address.port > 0
        url = f"http://127.0.0.1:{server.address.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
    finally:
        server.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["aipool_test_ratio"].samples[0].value == 0.5
    assert families["aipool_test_ratio"].samples[0].labels == {"cluster": "lab"}
