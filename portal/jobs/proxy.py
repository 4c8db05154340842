"""Jupyter through the portal: an authenticated reverse proxy to the node's notebook server.

Users need no route to the compute nodes and never handle the server's token, as with Open
OnDemand's node proxy. A Jupyter job serves under ``/jupyter/JOBID/`` (``jobspec``'s template)
and the portal answers that same path: it checks on the server that the caller owns the job,
reads the job's connection file, and forwards the request to the node with the token as an
``Authorization`` header. Nobody else gets through, whatever link they follow.

The job's user writes the connection file, so it is never trusted for where to connect: the
job must be one the portal started as a Jupyter job (not merely labelled so by ``sbatch``),
the host is the address Slurm has for the job's node, the port one of ``PROXY_PORT_RANGE``
(where no service of the site listens) and the base URL the one the portal gave
(:func:`portal.jobs.monitor.connection`). A file rewritten to name slurmrestd, a ``/metrics``
or the database gets the job refused, not their answers.

The portal's own cookies never reach Jupyter, nor does the browser's ``Origin`` (the portal
checks it). Requests that change state must carry Jupyter's double-submit XSRF header, as
JupyterLab always sends: a page on another site that posts to this path with the user's
portal session is refused before anything is forwarded. Kernels' WebSockets take the same
checks in ``portal.asgi``, in front of this app.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
from flask import Blueprint, current_app, request
from flask_login import login_required
from werkzeug.wrappers import Response

from jobspec.status import JupyterConnection
from portal.errors import BadGateway, Forbidden, Unavailable
from portal.i18n import gettext
from portal.jobs import monitor
from portal.slurm import slurm
from portal.web import current_access, session

bp = Blueprint("jupyter_proxy", __name__)  # portal.web's CSRF hook leaves it to _check_xsrf

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
SAFE = {"GET", "HEAD", "OPTIONS"}
# hop-by-hop headers (RFC 9110 7.6.1) and those the proxy sets itself
DROP_REQUEST = {
    "connection", "keep-alive", "proxy-authorization", "te", "trailer", "transfer-encoding",
    "upgrade", "host", "content-length", "cookie", "authorization", "origin", "referer",
}  # fmt: skip
DROP_RESPONSE = {
    "connection", "keep-alive", "proxy-authenticate", "te", "trailer", "transfer-encoding",
    "upgrade", "content-length",
}  # fmt: skip
CACHE_S = 10.0  # a connection is looked up in Slurm at most this often per user and job


STARTING = (
    '<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">'
    "<title>Jupyter is starting</title></head><body><p>The Jupyter server of job {job_id} is "
    "starting; this page tries again every 2 seconds.</p></body></html>"
)
_cache: dict[tuple[int, int], tuple[float, JupyterConnection]] = {}
_lock = threading.Lock()


def connection(job_id: int) -> JupyterConnection:
    access = current_access()
    key = (access.user_id, job_id)
    now = time.monotonic()
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    # owner only, else Forbidden; a Jupyter job the portal started, on its node, in the range
    conn = monitor.jupyter(session(), access, slurm(), job_id)
    if conn is None:
        raise Unavailable(
            gettext("The Jupyter server of job %(id)d is not running (yet).", id=job_id)
        )
    with _lock:
        for stale in [k for k, (until, _) in _cache.items() if until <= now]:
            del _cache[stale]  # ended sessions do not pile up
        _cache[key] = (now + CACHE_S, conn)
    return conn


def _http() -> httpx.Client:
    """One client per app, as for inference calls: a new one per request would build a new
    SSL context each time, and JupyterLab makes a hundred requests to open."""
    client: httpx.Client | None = current_app.extensions.get("aipool.jupyter.http")
    if client is None:
        client = httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0))
        current_app.extensions["aipool.jupyter.http"] = client
    return client


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether a browser's ``Origin`` is the portal's own (``scheme://host``)."""
    theirs = urlsplit(origin)
    return (theirs.scheme, theirs.netloc) == (scheme, host)


def _check_xsrf() -> None:
    """State-changing requests: same origin, and Jupyter's XSRF header equal to its cookie."""
    if (origin := request.headers.get("Origin")) and not same_origin(
        origin, request.scheme, request.host
    ):
        raise Forbidden(gettext("A cross-origin request to a Jupyter server is refused."))
    cookie = request.cookies.get("_xsrf", "")
    header = request.headers.get("X-XSRFToken", "")
    if not cookie or not hmac.compare_digest(cookie, header):
        raise Forbidden(gettext("A request that changes a Jupyter server needs its XSRF token."))


def jupyter_cookies() -> str:
    """The browser's cookies less the portal's own (its session never reaches the node)."""
    mine = {
        current_app.config.get("SESSION_COOKIE_NAME", "session"),
        current_app.config.get("REMEMBER_COOKIE_NAME", "remember_token"),
    }
    return "; ".join(f"{k}={v}" for k, v in request.cookies.items() if k not in mine)


@bp.route("/jupyter/<id:job_id>/", defaults={"path": ""}, methods=METHODS)
@bp.route("/jupyter/<id:job_id>/<path:path>", methods=METHODS)
@login_required
def forward(job_id: int, path: str) -> Response:
    conn = connection(job_id)
    if request.method not in SAFE:
        _check_xsrf()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in DROP_REQUEST}
    headers["Authorization"] = f"token {conn.token}"
    if cookies := jupyter_cookies():
        headers["Cookie"] = cookies
    upstream = f"http://{conn.authority}"  # Slurm's address of the node, a port of the range
    client = _http()
    outgoing = client.build_request(
        request.method,
        f"{upstream}{conn.base_url}{path}",
        params=list(request.args.items(multi=True)),
        headers=headers,
        content=request.get_data(),
    )
    try:
        answer = client.send(outgoing, stream=True)
    except httpx.ConnectError:
        if request.method == "GET" and request.accept_mimetypes.accept_html:
            # the job published its address a moment before the server listens: wait here
            page = STARTING.format(job_id=job_id)
            return Response(page, 503, {"Retry-After": "2"}, mimetype="text/html")
        raise BadGateway(
            gettext("The Jupyter server of job %(id)d does not answer.", id=job_id)
        ) from None
    except httpx.HTTPError:
        raise BadGateway(
            gettext("The Jupyter server of job %(id)d does not answer.", id=job_id)
        ) from None
    out = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in DROP_RESPONSE]
    out = [(k, v.removeprefix(upstream) if k.lower() == "location" else v) for k, v in out]

    def body() -> Iterator[bytes]:
        try:
            yield from answer.iter_raw()
        finally:
            answer.close()

    return Response(body(), status=answer.status_code, headers=out)
