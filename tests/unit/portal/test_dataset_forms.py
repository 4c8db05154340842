"""The dataset page's forms in both languages: a new version uploaded (only those files, or on
top of the previous version's, which are linked and not read again), copied from a cluster
directory or an object store, and shares with a user, a project or a domain until a day —
each valid, invalid (the message on its field) and tried by another tenant (404, nothing
changed); shares through the API, in the directories' readers, and expired by the daemon's
pass."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from portal.datasets import shares, unix
from portal.datasets.models import Dataset, DatasetShare, DatasetVersion
from portal.datasets.storage import scan
from portal.extensions import db
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_datasets import (
    API,
    configure,
    make_dataset,
    png,
    s3_client,
    s3_endpoint,
    s3_stores,
    staged,
    upload,
    version_rows,
)
from tests.unit.portal.test_model_pages import client_of, error_on, token_of

__all__ = ["s3_endpoint"]  # the fixture, used by name
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@dataclass
class Clock:
    at: datetime = T0

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


@pytest.fixture
def clock(env: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    c = Clock()
    monkeypatch.setitem(env.app.config, "CLOCK", c)
    return c


def files_of(env: Env, ds: int, version: int) -> dict[str, str]:
    rows = env.api("alice").get(f"{API}/{ds}/versions/{version}/files").json
    return {f["path"]: f["sha256"] for f in rows}


def post_files(client: FlaskClient, url: str, files: dict[str, bytes], **form: Any) -> Any:
    data = {**form, "files": [(io.BytesIO(b), name) for name, b in files.items()]}
    return client.post(url, data=data, content_type="multipart/form-data")


NOTE = {
    "en": ("A new version holds only the files you give it now", "Version 2 made: 3 files"),
    "zh": ("新版本只包含你这次提供的文件", "已创建版本 2：3 个文件"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_new_version_holds_the_upload_or_builds_on_the_previous_one(
    env: Env, store: Path, lang: str
) -> None:
    note, made = NOTE[lang]
    ds = make_dataset(env, "alice", "nlp")
    client = client_of(env, "alice", lang)
    url = f"/datasets/{ds}"
    page = client.get(url).get_data(as_text=True)
    assert note in page  # the page says what a new version holds
    assert 'id="keep-previous"' not in page  # nothing to start from yet
    r = post_files(client, url, {"a.txt": b"alpha", "b.txt": b"beta"}, csrf_token=csrf(page))
    assert r.status_code == 302
    page = client.get(url).get_data(as_text=True)
    assert 'id="keep-previous"' in page
    # on top of v1: b.txt replaced, c.txt added, a.txt carried over as a link of v1's file
    r = post_files(
        client, url, {"b.txt": b"BETA", "c.txt": b"gamma"}, keep_previous="y", csrf_token=csrf(page)
    )
    assert r.status_code == 302
    assert made in client.get(url).get_data(as_text=True)
    v1, v2 = files_of(env, ds, 1), files_of(env, ds, 2)
    assert sorted(v2) == ["a.txt", "b.txt", "c.txt"]
    assert v2["a.txt"] == v1["a.txt"]
    assert v2["b.txt"] != v1["b.txt"]
    assert (store / str(ds) / "v2" / "a.txt").samefile(store / str(ds) / "v1" / "a.txt")
    assert (store / str(ds) / "v2" / "b.txt").read_bytes() == b"BETA"
    # the checksum reused for the linked file is the one a fresh read gives
    fresh = scan(store / str(ds) / "v2")
    assert env.api("alice").get(f"{API}/{ds}/versions/2").json["checksum"] == fresh.checksum
    # without the box: only what was sent
    assert post_files(client, url, {"d.txt": b"delta"}, csrf_token=csrf(page)).status_code == 302
    assert sorted(files_of(env, ds, 3)) == ["d.txt"]
    # the API does the same with keep_previous
    r = upload(env, "alice", ds, {"e.txt": b"eps"}, keep_previous="true")
    assert r.status_code == 201, r.json
    assert sorted(files_of(env, ds, 4)) == ["d.txt", "e.txt"]


def test_a_refused_upload_names_the_problem_and_leaves_nothing(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    client = client_of(env, "alice", "zh")
    url = f"/datasets/{ds}"
    page = client.get(url).get_data(as_text=True)
    r = post_files(client, url, {"x.zip": b"junk"}, extract="y", csrf_token=csrf(page))
    assert r.status_code == 422
    assert "不是可读取的压缩包" in error_on(r.get_data(as_text=True), "upload-files")
    r = post_files(client, url, {}, csrf_token=csrf(page))
    assert r.status_code == 422
    assert "请至少选择一个要上传的文件" in r.get_data(as_text=True)
    assert version_rows(env) == 0
    assert staged(store) == []
    # another tenant: not found, nothing made
    dave = client_of(env, "dave", "zh")
    r = post_files(dave, url, {"a.txt": b"a"}, csrf_token=token_of(dave, "/datasets"))
    assert r.status_code == 404
    assert "未找到该数据集" in r.get_data(as_text=True)
    assert version_rows(env) == 0


def csrf(page: str) -> str:
    from tests.unit.portal.test_pages import csrf_of

    return csrf_of(page)


def test_copy_from_a_cluster_directory(env: Env, store: Path, tmp_path: Path) -> None:
    source = tmp_path / "cluster" / "corpus"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("alpha")
    (source / "sub" / "b.txt").write_text("beta")
    ds = make_dataset(env, "alice", "nlp")
    url = f"/datasets/{ds}"
    client = client_of(env, "alice", "en")
    page = client.get(url).get_data(as_text=True)
    assert str(tmp_path / "cluster") in page  # the roots one may copy from are named
    form = {
        "source": "path",
        "path": str(source),
        "note": "from the cluster",
        "csrf_token": csrf(page),
    }
    r = client.post(f"{url}/import", data=form)
    assert r.status_code == 302, r.get_data(as_text=True)
    assert sorted(files_of(env, ds, 1)) == ["a.txt", "sub/b.txt"]
    assert "Cluster directory" in client.get(url).get_data(as_text=True)
    zh = client_of(env, "alice", "zh")
    r = zh.post(f"{url}/import", data={**form, "path": "/etc", "csrf_token": token_of(zh, url)})
    assert r.status_code == 422
    assert "不在允许导入的根目录下" in error_on(r.get_data(as_text=True), "import-path")
    r = zh.post(f"{url}/import", data={**form, "path": "", "csrf_token": token_of(zh, url)})
    assert r.status_code == 422
    assert "来源为集群目录时必须提供路径" in error_on(r.get_data(as_text=True), "import-path")
    dave = client_of(env, "dave", "en")
    r = dave.post(f"{url}/import", data={**form, "csrf_token": token_of(dave, "/datasets")})
    assert r.status_code == 404
    assert version_rows(env) == 1
    assert staged(store) == []


def test_copy_from_an_object_store(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3_endpoint: str
) -> None:
    configure(env, tmp_path, monkeypatch, DATASET_S3_STORES=s3_stores(s3_endpoint))
    s3 = s3_client(s3_endpoint)
    s3.create_bucket(Bucket="form-data")
    s3.put_object(Bucket="form-data", Key="set/a.png", Body=png())
    ds = make_dataset(env, "alice", "nlp")
    url = f"/datasets/{ds}"
    client = client_of(env, "alice", "en")
    page = client.get(url).get_data(as_text=True)
    assert '<option value="lab">lab</option>' in page
    form = {"source": "s3", "store": "lab", "bucket": "form-data", "prefix": "set",
            "csrf_token": csrf(page)}  # fmt: skip
    assert client.post(f"{url}/import", data=form).status_code == 302
    assert sorted(files_of(env, ds, 1)) == ["a.png"]
    zh = client_of(env, "alice", "zh")
    bad = {**form, "prefix": "nothing", "csrf_token": token_of(zh, url)}
    r = zh.post(f"{url}/import", data=bad)
    assert r.status_code == 422
    assert "下没有对象" in error_on(r.get_data(as_text=True), "import-prefix")
    r = zh.post(f"{url}/import", data={**bad, "prefix": "set", "store": "elsewhere"})
    assert r.status_code == 422
    assert "没有名为 elsewhere 的对象存储" in error_on(r.get_data(as_text=True), "import-store")
    assert version_rows(env) == 1


def share_rows(env: Env) -> list[tuple[str, int]]:
    with env.app.app_context():
        rows = db.session.scalars(select(DatasetShare).order_by(DatasetShare.id))
        return [(r.grantee_kind, r.grantee_id) for r in rows]


SHARE_SAID = {
    "en": (
        "Shared with dave.",
        "There is no project named nope.",
        "The expiry must be in the future",
    ),
    "zh": ("已共享给 dave。", "没有名为 nope 的项目。", "过期时间必须晚于现在"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_share_a_dataset_until_a_day(env: Env, store: Path, clock: Clock, lang: str) -> None:
    shared, no_project, past = SHARE_SAID[lang]
    ds = make_dataset(env, "alice", "nlp", name="corpus")  # private
    assert upload(env, "alice", ds, {"a.txt": b"alpha"}).status_code == 201
    url = f"/datasets/{ds}"
    dave = client_of(env, "dave", lang)  # another domain
    dave_token = token_of(dave, "/datasets")
    assert dave.get(url).status_code == 404
    # dave cannot share what he cannot see
    form = {"grantee_kind": "user", "grantee": "dave", "expires": "2026-12-05"}
    assert dave.post(f"{url}/shares", data={**form, "csrf_token": dave_token}).status_code == 404
    assert share_rows(env) == []
    client = client_of(env, "alice", lang)
    token = token_of(client, url)
    r = client.post(f"{url}/shares", data={**form, "csrf_token": token})
    assert r.status_code == 302
    assert shared in client.get(url).get_data(as_text=True)
    assert "corpus" in dave.get("/datasets").get_data(as_text=True)
    page = dave.get(url).get_data(as_text=True)
    assert 'id="share"' not in page  # a reader does not share it on
    with env.api("dave").get(f"{API}/{ds}/versions/1/files/a.txt") as got:
        assert got.data == b"alpha"
    r = dave.post(f"{url}/shares", data={**form, "grantee": "erin", "csrf_token": dave_token})
    assert r.status_code == 403
    assert share_rows(env) == [("user", env.world.users["dave"])]
    # refusals on their fields
    r = client.post(
        f"{url}/shares",
        data={**form, "grantee_kind": "project", "grantee": "nope", "csrf_token": token},
    )
    assert r.status_code == 422
    assert no_project in error_on(r.get_data(as_text=True), "share-grantee")
    r = client.post(f"{url}/shares", data={**form, "expires": "2026-11-01", "csrf_token": token})
    assert r.status_code == 422
    assert past in error_on(r.get_data(as_text=True), "share-expires")
    # the day ends: dave reads nothing any more
    clock.at = datetime(2026, 12, 6, 0, 0, 1, tzinfo=UTC)
    assert dave.get(url).status_code == 404
    assert "corpus" not in dave.get("/datasets").get_data(as_text=True)
    assert env.api("dave").get(f"{API}/{ds}/versions/1/files/a.txt").status_code == 404


def test_project_shares_through_the_api_and_the_directory_readers(
    env: Env, store: Path, clock: Clock
) -> None:
    ds = make_dataset(env, "alice", "nlp", name="corpus")
    assert upload(env, "alice", ds, {"a.txt": b"alpha"}).status_code == 201
    vision = env.world.projects["vision"]
    body = {"grantee_kind": "project", "grantee_id": vision,
            "expires_at": (T0 + timedelta(days=2)).isoformat()}  # fmt: skip
    assert env.api("dave").post(f"{API}/{ds}/shares", json=body).status_code == 404
    assert env.api("gina").post(f"{API}/{ds}/shares", json=body).status_code == 404  # private
    r = env.api("alice").post(f"{API}/{ds}/shares", json=body)
    assert r.status_code == 201, r.json
    assert env.api("bob").get(f"{API}/{ds}").status_code == 200  # a member of vision
    assert env.api("dave").get(f"{API}/{ds}").status_code == 404
    listed = env.api("alice").get(f"{API}/{ds}/shares").json
    assert [(s["grantee_kind"], s["grantee_id"]) for s in listed] == [("project", vision)]
    assert env.api("bob").get(f"{API}/{ds}/shares").status_code == 403  # readers do not list
    with env.app.app_context():
        row = db.session.get(Dataset, ds)
        assert row is not None
        assert {"alice", "bob"} <= set(unix.readers(db.session, row) or ())
        assert "dave" not in (unix.readers(db.session, row) or ())
    # the daemon's pass removes it once expired; nothing before
    with env.app.app_context():
        assert shares.expire(db.session, T0) == []
        lines = shares.expire(db.session, T0 + timedelta(days=3), dry_run=True)
        assert lines == [f"would dataset {ds}: share with project {vision} expired"]
        assert shares.expire(db.session, T0 + timedelta(days=3)) == lines[0].split(" ", 1)[1:]
        assert db.session.scalar(select(func.count()).select_from(DatasetShare)) == 0
        row = db.session.get(Dataset, ds)
        assert row is not None
        assert "bob" not in (unix.readers(db.session, row) or ())
    # the control daemon's pass does it too, at its clock
    r = env.api("alice").post(f"{API}/{ds}/shares", json=body)
    assert r.status_code == 201
    clock.at = T0 + timedelta(days=3)
    assert reconcile(env) == [f"dataset {ds}: share with project {vision} expired"]
    assert env.api("bob").get(f"{API}/{ds}").status_code == 404
    clock.at = T0
    r = env.api("alice").post(f"{API}/{ds}/shares", json={**body, "expires_at": None})
    assert r.status_code == 201
    assert env.api("alice").delete(f"{API}/{ds}/shares/9999").status_code == 404
    assert env.api("bob").delete(f"{API}/{ds}/shares/{r.json['id']}").status_code == 403
    assert env.api("alice").delete(f"{API}/{ds}/shares/{r.json['id']}").status_code == 204
    assert env.api("bob").get(f"{API}/{ds}").status_code == 404
    with env.app.app_context():
        assert db.session.scalar(select(func.count()).select_from(DatasetVersion)) == 1
