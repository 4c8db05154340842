"""The portal's server: Flask for every HTTP request, and the WebSockets of Jupyter sessions.

The portal is a WSGI application, and WSGI has no WebSockets; JupyterLab's kernels speak over
them. So the portal is served by an ASGI server (uvicorn): HTTP goes to the Flask app in a
pool of worker threads (a2wsgi), and a WebSocket under ``/jupyter/JOBID/`` is relayed to the
node's notebook server after the same checks as the HTTP proxy (``portal.jobs.proxy``): a
portal session of the job's owner, and an ``Origin`` of the portal itself (a page elsewhere
cannot open a kernel with the user's cookie). Every other WebSocket is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from a2wsgi import WSGIMiddleware
from flask import Flask
from flask_login import current_user
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from portal.errors import (
    BadGateway,
    DomainError,
    Forbidden,
    NotFound,
    Unauthorized,
    envelope,
)

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JUPYTER = re.compile(r"^/jupyter/(?P<job>[1-9][0-9]{0,9})/(?P<rest>.*)$")
ID_MAX = 2**31 - 1  # as the portal's ``<id:…>`` routes (portal.app.IdConverter)
MAX_MESSAGE = 64 * 1024 * 1024  # a notebook's output can be large; Jupyter's own cap is 10 MiB


def application(app: Flask, threads: int = 8) -> ASGIApp:
    """``app`` as an ASGI application: HTTP in ``threads`` worker threads, Jupyter sockets."""
    http = WSGIMiddleware(app, workers=threads)  # type: ignore[arg-type]

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await _socket(app, scope, receive, send)
        elif scope["type"] == "http":
            await http(scope, receive, send)  # type: ignore[arg-type]

    return serve


def serve(app: Flask, *, host: str, port: int, threads: int) -> None:
    """Serve ``app`` until SIGTERM or SIGINT (uvicorn's own signal handling)."""
    import uvicorn

    logging.getLogger("uvicorn.error").addFilter(_answered_handshakes)
    uvicorn.Server(server_config(app, host=host, port=port, threads=threads)).run()


def server_config(app: Flask, *, host: str, port: int, threads: int) -> Any:
    """uvicorn's configuration of the portal (a ``uvicorn.Config``)."""
    import uvicorn

    trusted = trusted_proxies(app.config["TRUSTED_PROXIES"])
    return uvicorn.Config(
        application(app, threads),
        host=host,
        port=port,
        # X-Forwarded-For/-Proto only from the proxies the site lists (uvicorn's default
        # believes anyone on 127.0.0.1: a job or a user's process on the portal's host)
        proxy_headers=bool(trusted),
        forwarded_allow_ips=trusted,
        lifespan="off",
        ws="websockets-sansio",
        ws_max_size=MAX_MESSAGE,
        server_header=False,
        timeout_graceful_shutdown=10,
    )


def trusted_proxies(value: Any) -> list[str]:
    """``TRUSTED_PROXIES`` as uvicorn takes them: addresses and networks, each checked
    (a list, or one comma-separated string); ``[]`` believes nobody's forwarded headers."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    out = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        if item == "*":
            raise ValueError("TRUSTED_PROXIES: name the proxies, not '*' (anyone could forward)")
        ipaddress.ip_network(item, strict=False)  # ValueError for anything else
        out.append(item)
    return out


def _answered_handshakes(record: logging.LogRecord) -> bool:
    """uvicorn's sans-I/O WebSocket protocol logs an error when a handshake is answered with
    an HTTP response (the ASGI ``websocket.http.response`` extension) rather than accepted,
    although it sends that response. ``_socket`` always does one or the other."""
    return record.getMessage() != "ASGI callable returned without completing handshake."


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _check_origin(scope: Scope, headers: dict[str, str]) -> None:
    """Browsers always send ``Origin`` on a WebSocket; it must be the portal's own."""
    from portal.jobs.proxy import same_origin

    scheme = "https" if scope.get("scheme") == "wss" else "http"
    if not same_origin(headers.get("origin", ""), scheme, headers.get("host", "")):
        raise Forbidden("a WebSocket to a Jupyter server must come from the portal's own pages")


def _authorise(app: Flask, scope: Scope, headers: dict[str, str], job_id: int) -> Any:
    """The session's owner and the job's connection, as the HTTP proxy checks them."""
    from portal.jobs import proxy

    scheme = "https" if scope.get("scheme") == "wss" else "http"
    context = app.test_request_context(
        scope["path"],
        base_url=f"{scheme}://{headers.get('host', 'localhost')}",
        headers={k: v for k, v in headers.items() if k in ("cookie", "host", "user-agent")},
    )
    with context:
        if not current_user.is_authenticated:
            raise Unauthorized("sign in to the portal to reach a Jupyter server")
        return proxy.connection(job_id), proxy.jupyter_cookies()


async def _refuse(send: Send, exc: DomainError) -> None:
    """An HTTP answer to the handshake, in the portal's error envelope."""
    body = json.dumps(envelope(exc.status, exc.code, exc.message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "websocket.http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


async def _socket(app: Flask, scope: Scope, receive: Receive, send: Send) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    match = JUPYTER.match(scope["path"])
    headers = _headers(scope)
    try:
        if match is None:
            raise NotFound("the portal has no WebSocket at this address")
        job_id = int(match["job"])
        if job_id > ID_MAX:
            raise NotFound(f"no job {job_id}")
        _check_origin(scope, headers)
        conn, cookies = await asyncio.to_thread(_authorise, app, scope, headers, job_id)
    except DomainError as exc:
        await _refuse(send, exc)
        return
    query = scope.get("query_string", b"").decode("latin-1")
    target = f"ws://{conn.authority}{conn.base_url}{match['rest']}"  # checked as for HTTP
    upstream_headers = {"Authorization": f"token {conn.token}"}
    if cookies:
        upstream_headers["Cookie"] = cookies  # Jupyter's own (_xsrf), never the portal's
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p]
    try:
        upstream = await connect(
            f"{target}?{query}" if query else target,
            additional_headers=upstream_headers,
            subprotocols=offered or None,  # type: ignore[arg-type]
            max_size=MAX_MESSAGE,
            open_timeout=10,
            user_agent_header=None,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        message = f"the Jupyter server of job {job_id} refused the connection ({status})"
        await _refuse(send, Forbidden(message) if status == 403 else NotFound(message))
        return
    except (OSError, TimeoutError, WebSocketException):
        await _refuse(send, BadGateway(f"the Jupyter server of job {job_id} does not answer"))
        return
    async with upstream:
        await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
        await _relay(upstream, receive, send)


async def _relay(upstream: ClientConnection, receive: Receive, send: Send) -> None:
    """Frames both ways until either side closes; the other side is then closed too."""

    async def from_browser() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])

    async def from_node() -> None:
        async for data in upstream:
            key = "bytes" if isinstance(data, bytes) else "text"
            await send({"type": "websocket.send", key: data})

    tasks = [asyncio.create_task(from_browser()), asyncio.create_task(from_node())]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if (exc := task.exception()) is not None and not isinstance(exc, ConnectionClosed):
            log.warning("jupyter socket relay ended: %s", exc)
    if tasks[1] in done:  # the node closed: tell the browser (it may already be gone)
        with contextlib.suppress(OSError, RuntimeError):
            await send({"type": "websocket.close", "code": upstream.close_code or 1000})
