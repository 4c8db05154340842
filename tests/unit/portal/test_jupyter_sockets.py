"""Jupyter's WebSockets through the portal (``portal.asgi``): the owner's kernel socket is
relayed both ways with the server's token added; nobody else, no other origin and no other
path gets a socket; a server that is gone is a clear error.

The portal runs under uvicorn on a free port, as ``aipool portal`` serves it, in front of a real
WebSocket server standing in for the node's notebook server.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.sync.server import ServerConnection, serve

from portal.asgi import application
from portal.jobs import proxy
from tests.unit.portal.conftest import Env
from tests.unit.portal.jupyter_jobs import jupyter_job
from tests.unit.portal.test_pages import login

PROTOCOL = "v1.kernel.websocket.jupyter.org"


class Kernel:
    """A real WebSocket server: echoes each frame back with a prefix, records handshakes."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

        def echo(ws: ServerConnection) -> None:
            assert ws.request is not None
            self.seen.append(
                {"path": ws.request.path, "headers": dict(ws.request.headers.raw_items())}
            )
            for frame in ws:
                ws.send(b"echo:" + frame if isinstance(frame, bytes) else f"echo:{frame}")

        self.server = serve(echo, "127.0.0.1", 0, subprotocols=[PROTOCOL])
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


class Portal:
    """The app under uvicorn in a thread."""

    def __init__(self, env: Env) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(
            application(env.app, 4), port=self.port, lifespan="off", ws="websockets-sansio",
            log_level="warning",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        self.origin = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def kernel(users_own_files: None) -> Iterator[Kernel]:
    proxy._cache.clear()
    server = Kernel()
    yield server
    server.close()
    proxy._cache.clear()


@pytest.fixture
def portal(env: Env) -> Iterator[Portal]:
    server = Portal(env)
    yield server
    server.close()


@pytest.fixture
def job(env: Env, tmp_path: Path, kernel: Kernel, monkeypatch: pytest.MonkeyPatch) -> int:
    """Alice's Jupyter job as the portal starts one, its connection file naming the stand-in
    server's port (the one port of the range here)."""
    return jupyter_job(env, tmp_path, kernel.port, monkeypatch)


def _cookie(env: Env, who: str) -> str:
    client = login(env, who)
    cookie = client.get_cookie("session")
    assert cookie is not None
    return f"session={cookie.value}; _xsrf=abc"


def _open(portal: Portal, path: str, cookie: str | None, origin: str | None = None) -> Any:
    headers = {"Origin": origin or portal.origin}
    if cookie:
        headers["Cookie"] = cookie
    return connect(
        f"ws://127.0.0.1:{portal.port}{path}",
        additional_headers=headers,
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        open_timeout=10,
    )


def test_the_owners_kernel_socket_is_relayed_both_ways(
    env: Env, job: int, kernel: Kernel, portal: Portal
) -> None:
    path = f"/jupyter/{job}/api/kernels/k1/channels?session_id=s1"
    with _open(portal, path, _cookie(env, "alice")) as ws:
        assert ws.subprotocol == PROTOCOL
        ws.send("execute 1+1")
        assert ws.recv(timeout=10) == "echo:execute 1+1"
        ws.send(b"\x00\x01binary")
        assert ws.recv(timeout=10) == b"echo:\x00\x01binary"
    (seen,) = kernel.seen
    assert seen["path"] == path
    assert seen["headers"]["Authorization"] == "token s3cret"
    assert seen["headers"]["Cookie"] == "_xsrf=abc"  # the portal's session stays with it
    assert "Origin" not in seen["headers"]


@pytest.mark.parametrize("case", [(None, 401), ("gina", 403), ("bob", 404)])
def test_nobody_else_gets_a_socket(
    env: Env, job: int, kernel: Kernel, portal: Portal, case: tuple[str | None, int]
) -> None:
    who, status = case
    with pytest.raises(InvalidStatus) as refused:
        _open(portal, f"/jupyter/{job}/api/kernels/k1/channels", who and _cookie(env, who))
    assert refused.value.response.status_code == status
    assert json.loads(refused.value.response.body or b"{}")["message"]
    assert kernel.seen == []


def test_another_origin_and_other_paths_are_refused(
    env: Env, job: int, kernel: Kernel, portal: Portal
) -> None:
    alice = _cookie(env, "alice")
    cases = [
        (f"/jupyter/{job}/api/kernels/k1/channels", "http://evil.example", 403),
        ("/api/v1/jobs", None, 404),
        ("/jupyter/99999999999999999999/api/kernels/k1/channels", None, 404),
    ]
    for path, origin, status in cases:
        with pytest.raises(InvalidStatus) as refused:
            _open(portal, path, alice, origin)
        assert refused.value.response.status_code == status, path
    assert kernel.seen == []


def test_a_server_that_is_gone_is_a_clear_error(
    env: Env, job: int, kernel: Kernel, portal: Portal
) -> None:
    kernel.close()
    with pytest.raises(InvalidStatus) as refused:
        _open(portal, f"/jupyter/{job}/api/kernels/k1/channels", _cookie(env, "alice"))
    assert refused.value.response.status_code == 502
    assert "does not answer" in json.loads(refused.value.response.body or b"{}")["message"]


def test_http_still_reaches_the_app(env: Env, portal: Portal) -> None:
    import httpx

    r = httpx.get(f"{portal.origin}/api/v1/openapi.json", timeout=10)
    assert r.status_code == 200
    assert r.json()["info"]["title"]


def test_a_socket_to_a_port_outside_the_range_is_refused(
    env: Env, job: int, kernel: Kernel, portal: Portal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket takes the HTTP proxy's checks: the file's port must lie in the range."""
    monkeypatch.setitem(env.app.config, "PROXY_PORT_RANGE", "50000-50001")
    with pytest.raises(InvalidStatus) as refused:
        _open(portal, f"/jupyter/{job}/api/kernels/k1/channels", _cookie(env, "alice"))
    assert refused.value.response.status_code == 503
    assert kernel.seen == []
