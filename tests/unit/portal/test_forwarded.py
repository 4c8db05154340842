"""Forwarded headers (X-Forwarded-For, X-Forwarded-Proto) are believed from the proxies a
site lists in TRUSTED_PROXIES only: by default from nobody, not even 127.0.0.1, where every
local user and job can send them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from flask import Flask, request

from portal.asgi import server_config, trusted_proxies


@pytest.mark.parametrize(
    ("value", "expected"),
    [([], []), (None, []), ("", []), (["10.0.0.2"], ["10.0.0.2"]),
     ("10.0.0.2, 192.168.0.0/24", ["10.0.0.2", "192.168.0.0/24"]), (["fd00::1"], ["fd00::1"])],
)  # fmt: skip
def test_the_setting_is_a_list_of_addresses_and_networks(value: Any, expected: list[str]) -> None:
    assert trusted_proxies(value) == expected


@pytest.mark.parametrize("value", [["*"], "*", ["proxy.example"], ["10.0.0.300"], "a,b"])
def test_anything_else_stops_the_start(value: Any) -> None:
    with pytest.raises(ValueError, match=r"TRUSTED_PROXIES|does not appear to be"):
        trusted_proxies(value)


def _app(trusted: Any) -> Flask:
    app = Flask(__name__)
    app.config["TRUSTED_PROXIES"] = trusted

    @app.get("/who")
    def who() -> dict[str, Any]:
        return {"addr": request.remote_addr, "scheme": request.scheme}

    return app


@pytest.fixture
def served() -> Iterator[Any]:
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(trusted: Any) -> str:
        config = server_config(_app(trusted), host="127.0.0.1", port=0, threads=2)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}/who"

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


SPOOFED = {"X-Forwarded-For": "10.9.9.9", "X-Forwarded-Proto": "https"}


def test_by_default_nobodys_forwarded_headers_count(served: Any) -> None:
    seen = httpx.get(served([]), headers=SPOOFED, timeout=10).json()
    assert seen == {"addr": "127.0.0.1", "scheme": "http"}


def test_a_listed_proxys_forwarded_headers_count(served: Any) -> None:
    seen = httpx.get(served(["127.0.0.1"]), headers=SPOOFED, timeout=10).json()
    assert seen == {"addr": "10.9.9.9", "scheme": "https"}


def test_an_unlisted_proxys_forwarded_headers_do_not(served: Any) -> None:
    seen = httpx.get(served(["10.0.0.2"]), headers=SPOOFED, timeout=10).json()
    assert seen == {"addr": "127.0.0.1", "scheme": "http"}
