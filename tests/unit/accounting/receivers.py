"""A webhook receiver on loopback for the alert tests: a stdlib HTTP server in a thread that
records every request (path, query, JSON body), answers each path from a script of statuses,
and answers Prometheus instant queries from its samples."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Receiver(ThreadingHTTPServer):
    """Records every request; answers each path from its script of statuses (200 when the
    script is spent) and Prometheus queries from ``samples``."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.script: dict[str, list[int]] = {}
        self.samples: list[dict[str, Any]] = []

    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reset(self) -> Receiver:
        """Forget what came and what was scripted (between tests sharing one server)."""
        self.requests.clear()
        self.script.clear()
        self.samples = []
        return self

    def to(self, path: str) -> list[dict[str, Any]]:
        return [body for p, _, body in self.requests if p == path]


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.server.requests.append((parts.path, query, body))
        script = self.server.script.get(parts.path) or []
        status = script.pop(0) if script else 200
        reply = {"code": 0, "msg": "success"} if "feishu" in parts.path else {"errcode": 0}
        self._answer(status, reply)

    def do_GET(self) -> None:
        result = {"resultType": "vector", "result": self.server.samples}
        self._answer(200, {"status": "success", "data": result})

    def _answer(self, status: int, doc: dict[str, Any]) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def serving() -> Iterator[Receiver]:
    """A receiver answering in a thread until the block ends."""
    srv = Receiver()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
