"""The portal's Jupyter proxy: the owner gets through with the server's token added on the
server; others, state changes without Jupyter's XSRF header and cross-origin posts do not; the
portal's own session cookie never reaches the node."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from portal.jobs import proxy
from tests.unit.portal.conftest import Env
from tests.unit.portal.jupyter_jobs import jupyter_job, write_connection
from tests.unit.portal.test_pages import login


class Upstream:
    """A real HTTP server standing in for the node's notebook server: it records what it got."""

    monkeypatch: pytest.MonkeyPatch

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                upstream.seen.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": self.rfile.read(length) if length else b"",
                    }
                )
                if self.path.endswith("/go"):
                    self.send_response(302)
                    self.send_header("Location", f"{upstream.url}/jupyter/7/lab")
                    self.end_headers()
                    return
                body = b"<html>JupyterLab</html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Set-Cookie", "_xsrf=abc; Path=/jupyter/")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream(users_own_files: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    proxy._cache.clear()
    server = Upstream()
    server.monkeypatch = monkeypatch  # the test's settings (the proxy's port range)
    yield server
    server.close()
    proxy._cache.clear()


def _job(env: Env, tmp: Path, up: Upstream) -> int:
    return jupyter_job(env, tmp, up.port, up.monkeypatch)


def test_the_owner_reaches_the_server_with_the_token_added(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    job = _job(env, tmp_path, upstream)
    alice = login(env, "alice")
    r = alice.get(f"/jupyter/{job}/lab?reset=1")
    assert r.status_code == 200
    assert r.get_data() == b"<html>JupyterLab</html>"
    assert "_xsrf=abc" in r.headers["Set-Cookie"]
    (seen,) = upstream.seen
    assert seen["path"] == f"/jupyter/{job}/lab?reset=1"
    assert seen["headers"]["Authorization"] == "token s3cret"
    assert "session=" not in seen["headers"].get("Cookie", "")  # the portal's cookie stays
    r = alice.get(f"/jupyter/{job}/go")
    assert r.status_code == 302
    assert r.headers["Location"] == "/jupyter/7/lab"  # the node's address is not shown


@pytest.mark.parametrize(("who", "status"), [("gina", 403), ("admin", 403), ("bob", 404)])
def test_nobody_else_gets_through(
    env: Env, tmp_path: Path, upstream: Upstream, who: str, status: int
) -> None:
    job = _job(env, tmp_path, upstream)
    assert login(env, who).get(f"/jupyter/{job}/lab").status_code == status
    assert env.app.test_client().get(f"/jupyter/{job}/lab").status_code in (302, 401)
    assert upstream.seen == []


def test_state_changes_need_jupyters_xsrf_header_and_the_same_origin(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    job = _job(env, tmp_path, upstream)
    alice = login(env, "alice")
    url = f"/jupyter/{job}/api/sessions"
    assert alice.post(url, json={"kernel": {}}).status_code == 403  # no XSRF cookie or header
    alice.set_cookie("_xsrf", "abc", path=f"/jupyter/{job}/")
    assert alice.post(url, json={}, headers={"X-XSRFToken": "other"}).status_code == 403
    evil = {"X-XSRFToken": "abc", "Origin": "http://evil.example"}
    assert alice.post(url, json={}, headers=evil).status_code == 403
    assert upstream.seen == []
    r = alice.post(url, json={"kernel": {}}, headers={"X-XSRFToken": "abc"})
    assert r.status_code == 200
    (seen,) = upstream.seen
    assert seen["method"] == "POST"
    assert json.loads(seen["body"]) == {"kernel": {}}
    assert "Origin" not in seen["headers"]
    assert "_xsrf=abc" in seen["headers"]["Cookie"]


def test_a_server_that_is_gone_is_a_clear_error(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    job = _job(env, tmp_path, upstream)
    upstream.close()
    alice = login(env, "alice")
    r = alice.get(f"/jupyter/{job}/lab", headers={"Accept": "text/html"})
    assert r.status_code == 503  # a browser waits: the server may be about to listen
    assert 'http-equiv="refresh"' in r.get_data(as_text=True)
    r = alice.get(f"/jupyter/{job}/api/status", headers={"Accept": "application/json"})
    assert r.status_code == 502
    assert "does not answer" in r.get_data(as_text=True)


def test_a_job_only_labelled_jupyter_is_not_proxied(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    """``sbatch --comment=aipool:jupyter=1`` makes no Jupyter job of the portal's."""
    job = jupyter_job(env, tmp_path, upstream.port, upstream.monkeypatch, launched=False)
    alice = login(env, "alice")
    assert alice.get(f"/jupyter/{job}/lab").status_code == 409
    assert env.api("alice").get(f"/api/v1/jobs/{job}/jupyter").status_code == 409
    assert upstream.seen == []


def test_the_host_is_slurms_and_the_file_names_only_the_port(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    """A connection file naming another host still reaches the job's node, at the address
    Slurm has for it; what the API shows is that address too."""
    job = jupyter_job(
        env, tmp_path, upstream.port, upstream.monkeypatch, conn={"host": "169.254.169.254"}
    )
    assert login(env, "alice").get(f"/jupyter/{job}/lab").status_code == 200
    assert len(upstream.seen) == 1
    shown = env.api("alice").get(f"/api/v1/jobs/{job}/jupyter").get_json()
    assert shown["host"] == "127.0.0.1"
    assert shown["url"].startswith(f"http://127.0.0.1:{upstream.port}/jupyter/{job}/")


@pytest.mark.parametrize(
    "change",
    [
        {"port": 6820},  # slurmrestd: outside the range
        {"port": "6820"},
        {"port": True},
        {"base_url": "/"},  # not the path the portal gave
        {"base_url": "/jupyter/1/"},
        {"job_id": 1},
    ],
)
def test_a_rewritten_connection_file_reaches_nothing(
    env: Env, tmp_path: Path, upstream: Upstream, change: dict[str, Any]
) -> None:
    job = jupyter_job(env, tmp_path, upstream.port, upstream.monkeypatch)
    good = json.loads((tmp_path / f"jupyter-{job}.json").read_text())
    write_connection(tmp_path, job, {**good, **change})
    alice = login(env, "alice")
    r = alice.get(f"/jupyter/{job}/api/status", headers={"Accept": "application/json"})
    assert r.status_code == 503  # "not running (yet)": nothing is forwarded anywhere
    assert upstream.seen == []


def test_a_job_slurm_places_on_no_known_node_reaches_nothing(
    env: Env, tmp_path: Path, upstream: Upstream
) -> None:
    job = jupyter_job(env, tmp_path, upstream.port, upstream.monkeypatch)
    env.slurm.nodes_list[:] = [n for n in env.slurm.nodes_list if n.name != "jnode1"]
    r = login(env, "alice").get(f"/jupyter/{job}/lab", headers={"Accept": "application/json"})
    assert r.status_code == 503
    assert upstream.seen == []
