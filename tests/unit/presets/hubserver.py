"""A Hugging Face hub on loopback, as much of it as ``huggingface_hub`` uses to fill a mirror:
``GET /api/models/{repo}/revision/{rev}`` (the files with their sizes, git blob ids and LFS
sha256) and ``HEAD``/``GET /{repo}/resolve/{rev}/{file}`` with the headers ``hf_hub_download``
reads (``X-Repo-Commit``, ``ETag``, ``X-Linked-Etag``, ``X-Linked-Size``, ``Content-Length``)
and ``Range`` requests. ``cut`` counts, per file, the transfers that stop half-way (the
connection closes); ``lie`` names files served with other bytes than the listing's digest.

The ModelScope side serves ``GET /api/v1/models/{repo}/repo/files`` and
``GET /api/v1/models/{repo}/repo?FilePath=…`` over the same files (without the CDN's
``X-Linked-Etag``, so the mirror's own check is what refuses a bad file).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass
class Hub:
    repo: str
    files: dict[str, bytes]
    lfs: set[str]
    cut: dict[str, int] = field(default_factory=dict)
    lie: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def siblings(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for name, data in self.files.items():
            row: dict[str, object] = {"rfilename": name, "size": len(data), "blobId": blob_id(data)}
            if name in self.lfs:
                sha = hashlib.sha256(data).hexdigest()
                row["lfs"] = {"size": len(data), "sha256": sha, "pointerSize": 134}
            out.append(row)
        return out

    def served(self, name: str) -> bytes:
        data = self.files[name]
        return bytes(b ^ 0xFF for b in data) if name in self.lie else data


class _Handler(BaseHTTPRequestHandler):
    hub: Hub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _json(self, body: object) -> None:
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _missing(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.send_header("X-Error-Code", "EntryNotFound")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, *, body: bool) -> None:
        hub = self.hub
        hub.requests.append(f"{self.command} {self.path} {self.headers.get('Range', '')}".strip())
        url = urlsplit(self.path)
        path = unquote(url.path)
        if path.startswith(f"/api/models/{hub.repo}/revision/"):
            return self._json({"id": hub.repo, "sha": COMMIT, "siblings": hub.siblings()})
        if path == f"/api/v1/models/{hub.repo}/repo/files":
            return self._json({"Code": 200, "Success": True, "Data": {"Files": self._ms_files()}})
        if path == f"/api/v1/models/{hub.repo}/repo":
            name = parse_qs(url.query).get("FilePath", [""])[0]
            return self._file(name, body=body, linked=False)
        match = re.fullmatch(rf"/{re.escape(hub.repo)}/resolve/[^/]+/(.+)", path)
        if match is None:
            return self._missing()
        return self._file(match.group(1), body=body)

    def _ms_files(self) -> list[dict[str, object]]:
        return [
            {
                "Name": name.rsplit("/", 1)[-1],
                "Path": name,
                "Type": "blob",
                "Size": len(data),
                "Sha256": hashlib.sha256(data).hexdigest(),
                "Revision": COMMIT,
            }
            for name, data in self.hub.files.items()
        ]

    def _file(self, name: str, *, body: bool, linked: bool = True) -> None:
        hub = self.hub
        if name not in hub.files:
            return self._missing()
        data = hub.served(name)
        start = 0
        ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if ranged:
            start = int(ranged.group(1))
        self.send_response(206 if ranged else 200)
        self.send_header("X-Repo-Commit", COMMIT)
        etag = hashlib.sha256(hub.files[name]).hexdigest() if name in hub.lfs else blob_id(data)
        self.send_header("ETag", f'"{etag}"')
        if name in hub.lfs and linked:
            self.send_header("X-Linked-Etag", f'"{etag}"')
            self.send_header("X-Linked-Size", str(len(data)))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if not body:
            return None
        if hub.cut.get(name, 0) > 0:
            hub.cut[name] -= 1
            self.wfile.write(data[start : start + (len(data) - start) // 2])
            self.wfile.flush()
            self.close_connection = True
            return None
        self.wfile.write(data[start:])
        return None


@contextmanager
def serve(hub: Hub) -> Iterator[Hub]:
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
