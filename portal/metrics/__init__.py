"""The portal's ``/metrics``: requests and their latency per route, for Prometheus.

Counted in a registry of the portal's own (never prometheus_client's global one), labelled by
the Flask endpoint name (bounded: the routes the portal has, ``none`` where no route matched),
the method (the HTTP methods, ``other`` for anything else) and the status class (``2xx`` …).

The route is off unless configured, and then open only to a scraper: ``METRICS_TOKEN`` (sent
as ``Authorization: Bearer …``, compared in constant time) and/or ``METRICS_ALLOW`` (client
addresses and networks, ``["10.0.0.5", "192.168.1.0/24"]`` or the same comma-separated). Each
one configured must pass. With neither the route answers 404, as if it did not exist; a wrong
or missing token, or an address outside the list, is 403 in the portal's error envelope. No
session, CSRF token or login is involved.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, current_app, g, request, request_started
from flask.typing import ResponseReturnValue
from flask_smorest import Api
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from werkzeug.exceptions import NotFound
from werkzeug.wrappers import Response as BaseResponse

from plumbing.metrics import name
from portal.errors import error_response
from portal.i18n import gettext
from portal.web import bearer

KEY = "aipool.metrics"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: latency buckets, seconds: a page or API call is 5 ms … 10 s; uploads may take longer
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Access:
    """Who may read ``/metrics``: parsed once from the configuration."""

    token: str | None
    allow: tuple[Network, ...]

    @property
    def enabled(self) -> bool:
        return bool(self.token) or bool(self.allow)


def parse_allow(value: object) -> tuple[Network, ...]:
    """``METRICS_ALLOW``: a list, or a comma-separated string, of IP addresses and CIDR
    networks; raises ValueError naming the entry that is neither."""
    if value is None or value == "":
        return ()
    items: Sequence[object]
    if isinstance(value, str):
        items = [x for x in (p.strip() for p in value.split(",")) if x]
    elif isinstance(value, list | tuple):
        items = value
    else:
        raise ValueError(f"METRICS_ALLOW: a list of IP addresses or networks, not {value!r}")
    out = []
    for item in items:
        try:
            out.append(ipaddress.ip_network(str(item).strip(), strict=False))
        except ValueError:
            raise ValueError(f"METRICS_ALLOW: not an IP address or network: {item!r}") from None
    return tuple(out)


def access_of(config: Any) -> Access:
    token = config.get("METRICS_TOKEN") or None
    if token is not None and not isinstance(token, str):
        raise ValueError("METRICS_TOKEN: a string")
    return Access(token, parse_allow(config.get("METRICS_ALLOW")))


class PortalMetrics:
    """The portal's registry: requests by endpoint, method and status class; latency by
    endpoint and method."""

    def __init__(self, access: Access) -> None:
        self.access = access
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            name("portal", "requests"),
            "Requests the portal answered, by route (Flask endpoint), method and status class.",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            name("portal", "request_seconds"),
            "Time to answer a request, by route (Flask endpoint) and method.",
            ["endpoint", "method"],
            buckets=BUCKETS,
            registry=self.registry,
        )

    def observe(self, endpoint: str, method: str, status: int, seconds: float | None) -> None:
        self.requests.labels(endpoint, method, f"{status // 100}xx").inc()
        if seconds is not None:
            self.latency.labels(endpoint, method).observe(seconds)


def _started(_sender: Flask, **_extra: Any) -> None:
    g.metrics_started = time.perf_counter()


def _count(response: BaseResponse) -> BaseResponse:
    metrics: PortalMetrics = current_app.extensions[KEY]
    started = g.get("metrics_started")
    rule = request.url_rule
    endpoint = rule.endpoint if rule is not None else "none"
    method = request.method if request.method in METHODS else "other"
    seconds = time.perf_counter() - started if started is not None else None
    metrics.observe(endpoint, method, response.status_code, seconds)
    return response


def _client_allowed(allow: tuple[Network, ...]) -> bool:
    try:
        client = ipaddress.ip_address(request.remote_addr or "")
    except ValueError:
        return False
    return any(client in net for net in allow)


def _token_ok(expected: str) -> bool:
    sent = bearer(request) or ""
    return hmac.compare_digest(sent.encode(), expected.encode())


def scrape() -> ResponseReturnValue:
    """``GET /metrics``: the exposition text, to a scraper the configuration lets in."""
    metrics: PortalMetrics = current_app.extensions[KEY]
    access = metrics.access
    if not access.enabled:
        raise NotFound()
    if access.allow and not _client_allowed(access.allow):
        return error_response(403, "forbidden", gettext("Metrics are not served to this address."))
    if access.token and not _token_ok(access.token):
        return error_response(
            403, "forbidden", gettext("Metrics need the scrape token (Authorization: Bearer).")
        )
    return Response(generate_latest(metrics.registry), mimetype=CONTENT_TYPE_LATEST)


def register(app: Flask, api: Api) -> None:
    """``/metrics`` and the request counting (every route's, this one's too)."""
    from portal.extensions import csrf, limiter

    try:
        access = access_of(app.config)
    except ValueError as exc:
        raise RuntimeError(f"metrics settings: {exc}") from None
    app.extensions[KEY] = PortalMetrics(access)
    request_started.connect(_started, app, weak=False)
    app.after_request(_count)
    view = limiter.exempt(csrf.exempt(scrape))
    app.add_url_rule("/metrics", "metrics", view, methods=["GET"])
