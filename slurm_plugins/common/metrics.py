"""Prometheus metrics: one naming scheme and one way to serve them, off unless configured.

Names start with ``aipool_``, are in base units and say so (``_seconds``, ``_bytes``,
``_ratio`` for 0…1, ``_total`` for counters); labels are bounded: ``cluster``, ``partition``,
``node``, ``kind``, ``model``, ``tenant``, ``qos``, ``policy``, a node's ``device`` and
``mount`` and small fixed sets (``state``, ``phase``, ``mode``, ``check``). Nothing here ever
names a job or a user.

Figures that describe the cluster now (cards, queues, device readings) are computed at
scrape time from the daemon's latest snapshot by a :class:`SnapshotCollector`; what happened
(cycles, writes) is counted with prometheus_client's own counters in the daemon's registry.

No daemon binds a port unless its configuration gives an address: several daemons of the
lab share one host, so there is no default port.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from slurm_plugins.common.address import Address

log = logging.getLogger("aipool.metrics")

T = TypeVar("T")

PREFIX = "aipool_"
#: suffixes a name may end in, and the unit each stands for
UNIT_SUFFIXES = ("_seconds", "_bytes", "_ratio", "_celsius", "_watts", "_cards")
_NAME = re.compile(r"^aipool_[a-z][a-z0-9_]*[a-z0-9]$")


def name(*parts: str) -> str:
    """``aipool_`` + the parts joined by ``_`` (``name("pool", "cards")``)."""
    full = PREFIX + "_".join(parts)
    if not _NAME.fullmatch(full):
        raise ValueError(f"not a metric name of the scheme: {full!r}")
    return full


class SnapshotCollector(Collector):
    """Metric families computed at scrape time by ``families()`` (from the latest
    snapshot a daemon keeps); a failure logs and yields nothing rather than failing the
    whole scrape."""

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        try:
            out = list(self._families())
        except Exception:  # a scrape must not take the daemon down
            log.exception("metrics: collecting failed")
            return iter(())
        return iter(out)


class Latest(Generic[T]):
    """The latest value a daemon published (a snapshot, samples), shared with the scrape
    thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: T | None = None

    def set(self, value: T) -> None:
        with self._lock:
            self._value = value

    def get(self) -> T | None:
        with self._lock:
            return self._value


@dataclass
class MetricsServer:
    """A running ``/metrics`` endpoint; ``address`` has the port actually bound."""

    address: Address
    server: WSGIServer
    thread: threading.Thread

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve(registry: CollectorRegistry, address: Address | None) -> MetricsServer | None:
    """Serve ``registry`` on ``http://address/metrics`` in a thread (prometheus_client's
    own server); ``None`` (no address configured) serves nothing."""
    if address is None:
        return None
    server, thread = start_http_server(address.port, address.host, registry)
    bound = Address(address.host, int(server.server_port))
    log.info("metrics on http://%s/metrics", bound)
    return MetricsServer(bound, server, thread)


def registry_of(collectors: Sequence[Collector]) -> CollectorRegistry:
    """A registry of its own (never the process-global one) holding ``collectors``."""
    registry = CollectorRegistry(auto_describe=False)
    for c in collectors:
        registry.register(c)
    return registry
