"""The API keeps its contract: every error in the one envelope with a message and the headers
its status needs, a bounded id on every route, no empty PATCH taken for a change, archives
whose names clash refused as input."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tests.unit.portal.conftest import Env
from tests.unit.portal.test_datasets import (
    leftovers,
    make_dataset,
    store,  # noqa: F401 - the fixture
    upload,
    version_rows,
)


def _envelope(body: dict[str, object], status: int) -> None:
    assert body["code"] == status
    assert isinstance(body["message"], str), body
    assert body["message"], body
    assert isinstance(body["error"], str), body
    assert body["error"], body


def test_405_names_the_allowed_methods(env: Env) -> None:
    r = env.api("alice").delete("/api/v1/auth/me")
    assert r.status_code == 405
    _envelope(r.json, 405)
    assert set(r.headers["Allow"].split(", ")) >= {"GET"}


def test_a_write_without_csrf_is_refused_with_a_message(env: Env) -> None:
    from tests.unit.portal.test_pages import login

    alice = login(env, "alice")
    r = alice.post("/api/v1/datasets", json={"project_id": 1, "name": "x"})
    assert r.status_code == 400
    _envelope(r.json, 400)
    assert "CSRF" in r.json["message"]


def test_a_body_over_the_limit_names_the_limit(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(env.app.config, "MAX_CONTENT_LENGTH", 2**20)
    body = b'{"name": "' + b"x" * 2**20 + b'"}'
    r = env.api("alice").post("/api/v1/datasets", data=body, content_type="application/json")
    assert r.status_code == 413
    _envelope(r.json, 413)
    assert r.json["message"] == "The request is larger than the portal accepts (1.0 MiB)."


def test_the_default_body_limit_is_the_largest_upload(env: Env) -> None:
    cfg = env.app.config
    assert cfg["MAX_CONTENT_LENGTH"] >= cfg["DATASET_MAX_FILE_BYTES"]


def test_version_numbers_past_the_id_range_are_not_found(env: Env) -> None:
    for number in (2**31, 2**63, 2**64 + 5):
        r = env.api("alice").get(f"/api/v1/models/1/versions/{number}")
        assert r.status_code == 404, number
        _envelope(r.json, 404)


def test_an_empty_patch_is_an_input_error(env: Env) -> None:
    user = env.world.users["alice"]
    for body in ({}, None):
        r = env.api("alice").patch(f"/api/v1/users/{user}", json=body)
        assert r.status_code == 422, body
        _envelope(r.json, 422)


def test_an_archive_with_a_file_and_a_directory_of_one_name_is_refused(
    env: Env,
    store: Path,  # noqa: F811
) -> None:
    for order in (("x", "x/y"), ("x/y", "x")):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            for name in order:
                info = tarfile.TarInfo(name)
                info.size = 2
                tar.addfile(info, io.BytesIO(b"hi"))
        ds = make_dataset(env, "alice", "nlp", name=f"clash{len(order[0])}")
        r = upload(env, "alice", ds, {"a.tar": out.getvalue()})
        assert r.status_code == 422, r.json
        assert "a file and a directory of the same name" in str(r.json["errors"])
        assert str(store) not in str(r.json)
    assert version_rows(env) == 0
    assert leftovers(store) == []


def test_pages_and_api_carry_the_security_headers(env: Env) -> None:
    for path in ("/login", "/api/v1/openapi.json", "/api/v1/jobs"):
        r = env.app.test_client().get(path)
        csp = r.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp, path
        assert "script-src 'self'" in csp, path
        assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "same-origin"
