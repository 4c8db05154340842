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
lab share one host, so there is no default port. Where ``AIPOOL_METRICS_TOKEN`` is set (the
lab sets it for every service), a scrape needs it as a bearer token.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any, Generic, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from plumbing.address import Address

log = logging.getLogger("aipool.metrics")

T = TypeVar("T")

PREFIX = "aipool_"
#: suffixes a name may end in, and the unit each stands for
UNIT_SUFFIXES = ("_seconds", "_bytes", "_ratio", "_celsius", "_watts", "_cards")
_NAME = re.compile(r"^aipool_[a-z][a-z0-9_]*[a-z0-9]$")
#: the scrape token of every AIPool ``/metrics`` (the portal reads it as ``METRICS_TOKEN``)
SCRAPE_ENV = "AIPOOL_METRICS_TOKEN"


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


def serve(
    registry: CollectorRegistry, address: Address | None, *, token: str | None = None
) -> MetricsServer | None:
    """Serve ``registry`` on ``http://address/metrics`` in a thread (prometheus_client's
    own server); ``None`` (no address configured) serves nothing. With a scrape token (here,
    else ``AIPOOL_METRICS_TOKEN`` in the environment, as the portal's) a scrape must send it
    as ``Authorization: Bearer …``: figures per tenant are not for every local user."""
    if address is None:
        return None
    token = token or os.environ.get(SCRAPE_ENV) or None
    if token is None:
        log.warning(
            "metrics on %s without a scrape token: anyone who reaches it reads them", address
        )
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET

    class Server(ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True

    app = make_wsgi_app(registry)
    wsgi = app if token is None else _bearer(app, token)
    server = make_server(address.host, address.port, wsgi, Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bound = Address(address.host, int(server.server_port))
    log.info("metrics on http://%s/metrics", bound)
    return MetricsServer(bound, server, thread)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged, as prometheus_client's own server does not."""


def _bearer(app: Any, token: str) -> Any:
    """``app`` behind ``Authorization: Bearer token`` (compared in constant time)."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Any) -> Any:
        given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
            return [b"a scrape token is needed\n"]
        return app(environ, start_response)

    return guarded


def registry_of(collectors: Sequence[Collector]) -> CollectorRegistry:
    """A registry of its own (never the process-global one) holding ``collectors``."""
    registry = CollectorRegistry(auto_describe=False)
    for c in collectors:
        registry.register(c)
    return registry
