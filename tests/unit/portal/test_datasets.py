"""Datasets API: create, version from uploads / cluster paths / S3 (moto's server), files,
previews, archives, mounts; and bad input that must leave nothing behind."""

from __future__ import annotations

import hashlib
import io
import os
import socket
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from PIL import Image

from portal import actas
from portal.datasets import service, sources
from portal.datasets.models import Dataset, DatasetVersion
from portal.datasets.storage import Budget, Limits
from portal.errors import ValidationFailed
from portal.extensions import db
from tests.integration.conftest import wait_until
from tests.unit import helpersite
from tests.unit.portal.conftest import Env

API = "/api/v1/datasets"


# ---------------------------------------------------------------------------- helpers
def configure(env: Env, tmp: Path, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> Path:
    """Point the app's dataset settings at ``tmp``; the storage root."""
    store = tmp / "store"
    settings = {
        "DATASET_STORAGE": str(store),
        "DATASET_IMPORT_ROOTS": [str(tmp / "cluster"), str(tmp / "home" / "{user}")],
        "DATASET_QUOTA_BYTES": 400_000,  # uploads stay under 500 kB: werkzeug keeps them in memory
        "DATASET_MAX_FILE_BYTES": 200_000,
        "DATASET_MAX_FILES": 1000,
        "DATASET_S3_STORES": {},
        **extra,
    }
    for key, value in settings.items():
        monkeypatch.setitem(env.app.config, key, value)
    return store


def png(width: int = 32, height: int = 24, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


def make_dataset(env: Env, who: str, project: str, name: str = "cats", **extra: Any) -> int:
    body = {"project_id": env.world.projects[project], "name": name, **extra}
    r = env.api(who).post(API, json=body)
    assert r.status_code == 201, r.json
    return int(r.json["id"])


def upload(env: Env, who: str, ds: int, files: dict[str, bytes], **form: Any) -> Any:
    data: dict[str, Any] = {
        **{k: str(v) for k, v in form.items()},
        "files": [(io.BytesIO(content), name) for name, content in files.items()],
    }
    return env.api(who).post(f"{API}/{ds}/upload", data=data, content_type="multipart/form-data")


def tar_bytes(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return out.getvalue()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, content in members.items():
            z.writestr(name, content)
    return out.getvalue()


def untar(data: bytes) -> dict[str, bytes]:
    """The regular files of a tar archive, by name."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            stream = tar.extractfile(member) if member.isfile() else None
            if stream is not None:
                out[member.name] = stream.read()
    return out


def leftovers(store: Path) -> list[str]:
    """Files and directories under the store, staging included."""
    if not store.exists():
        return []
    return sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.name != ".staging")


def staged(store: Path) -> list[Path]:
    """What is left in the staging area (nothing, after every request)."""
    area = store / ".staging"
    return list(area.iterdir()) if area.exists() else []


def version_rows(env: Env) -> int:
    with env.app.app_context():
        return db.session.query(DatasetVersion).count()


@pytest.fixture
def store(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure(env, tmp_path, monkeypatch)


# ---------------------------------------------------------------------------- datasets
def test_create_list_get_update_delete(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", description="corpus", visibility="project")
    got = env.api("alice").get(f"{API}/{ds}").json
    assert got["owner"] == "alice"
    assert got["project"] == "nlp"
    assert got["visibility"] == "project"
    names = [d["name"] for d in env.api("alice").get(API).json]
    assert names == ["cats"]
    assert env.api("alice").get(f"{API}?project_id={env.world.projects['vision']}").json == []
    r = env.api("alice").patch(f"{API}/{ds}", json={"visibility": "public", "description": "x"})
    assert r.status_code == 200
    assert r.json["visibility"] == "public"
    assert upload(env, "alice", ds, {"a.txt": b"hello"}).status_code == 201
    version_dir = Path(env.api("alice").get(f"{API}/{ds}/versions/1").json["path"])
    assert version_dir.is_dir()
    assert env.api("alice").delete(f"{API}/{ds}").status_code == 204
    assert env.api("alice").get(f"{API}/{ds}").status_code == 404
    assert not version_dir.exists()
    assert leftovers(store) == []  # the dataset goes whole, its directory with it
    audit = env.api("admin").get("/api/v1/audit?target_type=dataset").json
    assert {"dataset.create", "dataset.update", "dataset.version", "dataset.delete"} <= {
        e["action"] for e in audit
    }


def test_create_refuses_bad_input(env: Env, store: Path) -> None:
    nlp = env.world.projects["nlp"]
    bad = [
        {"project_id": nlp, "name": ""},
        {"project_id": nlp, "name": "../x"},
        {"project_id": nlp, "name": "ok", "visibility": "world"},
        {"project_id": nlp, "name": "a\nb"},
        {"name": "no-project"},
    ]
    for body in bad:
        r = env.api("alice").post(API, json=body)
        assert r.status_code == 422, body
        assert r.json["errors"]["json"]
    make_dataset(env, "alice", "nlp")
    r = env.api("alice").post(API, json={"project_id": nlp, "name": "cats"})
    assert r.status_code == 409
    assert "already has a dataset named cats" in r.json["message"]
    # a project one is not in is invisible; one with only project.read refuses creation
    r = env.api("alice").post(API, json={"project_id": env.world.projects["cs101"], "name": "x"})
    assert r.status_code == 404
    r = env.api("gina").post(API, json={"project_id": nlp, "name": "x"})
    assert r.status_code == 403


# ---------------------------------------------------------------------------- versions
def test_upload_files_and_archives_make_checksummed_read_only_versions(
    env: Env, store: Path
) -> None:
    ds = make_dataset(env, "alice", "nlp")
    files = {"a.txt": b"alpha\n", "img/red.png": png()}
    r = upload(env, "alice", ds, files, note="first")
    assert r.status_code == 201, r.json
    v1 = r.json
    assert (v1["version"], v1["file_count"], v1["source"], v1["note"]) == (1, 2, "upload", "first")
    assert v1["size_bytes"] == sum(len(c) for c in files.values())
    lines = sorted(f"{k}\0{hashlib.sha256(c).hexdigest()}\n" for k, c in files.items())
    assert v1["checksum"] == hashlib.sha256("".join(lines).encode()).hexdigest()
    path = Path(v1["path"])
    assert path.is_absolute()
    assert (path / "img" / "red.png").read_bytes() == files["img/red.png"]
    assert (path / "a.txt").stat().st_mode & 0o222 == 0  # read-only
    # the same files in a tar.gz and a zip are the same content: the same checksum
    r2 = upload(env, "alice", ds, {"data.tar.gz": tar_bytes(files)})
    r3 = upload(env, "alice", ds, {"data.zip": zip_bytes(files)})
    assert (r2.json["version"], r3.json["version"]) == (2, 3)
    assert r2.json["checksum"] == r3.json["checksum"] == v1["checksum"]
    # extract=false keeps the archive as one file
    r4 = upload(env, "alice", ds, {"data.zip": zip_bytes(files)}, extract="false")
    assert r4.json["file_count"] == 1
    versions = env.api("alice").get(f"{API}/{ds}/versions").json
    assert [v["version"] for v in versions] == [4, 3, 2, 1]
    # a version is immutable: there is no way to write to it through the API
    assert env.api("alice").put(f"{API}/{ds}/versions/1", json={}).status_code == 405
    assert env.api("alice").delete(f"{API}/{ds}/versions/1").status_code == 405


def test_upload_checks_a_given_sha256(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    content = b"payload" * 100
    good = hashlib.sha256(content).hexdigest()
    assert upload(env, "alice", ds, {"p.bin": content}, sha256=good).status_code == 201
    r = upload(env, "alice", ds, {"p.bin": content[:-1]}, sha256=good)  # truncated in transit
    assert r.status_code == 422
    assert "differs" in str(r.json["errors"])
    r = upload(env, "alice", ds, {"p.bin": content, "q.bin": content}, sha256=good)
    assert r.status_code == 422
    assert "sha256" in r.json["errors"]["json"]
    assert version_rows(env) == 1


BAD_UPLOADS: list[tuple[str, dict[str, bytes], int, str]] = [
    ("corrupt gzip", {"x.tar.gz": b"\x1f\x8b\x08\x00garbage" * 10}, 422, "not a readable archive"),
    ("truncated tar", {"x.tar.gz": tar_bytes({"a": b"1" * 5000})[:60]}, 422, "not a readable"),
    ("corrupt zip", {"x.zip": b"PK\x03\x04" + b"\x00" * 50}, 422, "not a readable archive"),
    ("dot-dot in tar", {"x.tar.gz": tar_bytes({"ok.txt": b"1", "../evil": b"2"})}, 422, "'..'"),
    ("dot-dot in zip", {"x.zip": zip_bytes({"a/../../evil": b"2"})}, 422, "'..'"),
    ("absolute in tar", {"x.tar": tar_bytes({"/etc/evil": b"2"})}, 422, "absolute"),
    ("link in tar", {"x.tar.gz": tar_bytes({"a": b"1"}, links={"l": "/etc/passwd"})}, 422, "link"),
    ("dot-dot file name", {"../evil.txt": b"2"}, 422, "'..'"),
    ("no files", {}, 422, "at least one file"),
    ("file over the limit", {"big.bin": b"0" * 200_001}, 409, "larger than"),
    ("archive member over the limit", {"x.zip": zip_bytes({"big": b"0" * 200_001})}, 409, "larger"),
    (
        "over the project quota",
        {f"f{i}.bin": os.urandom(150_000) for i in range(3)},
        409,
        "quota",
    ),
]


@pytest.mark.parametrize(
    ("files", "status", "text"), [c[1:] for c in BAD_UPLOADS], ids=[c[0] for c in BAD_UPLOADS]
)
def test_bad_uploads_are_refused_and_leave_nothing(
    env: Env, store: Path, files: dict[str, bytes], status: int, text: str
) -> None:
    ds = make_dataset(env, "alice", "nlp")
    r = upload(env, "alice", ds, files)
    assert r.status_code == status, r.json
    assert text in (r.json.get("message", "") + str(r.json.get("errors", ""))), r.json
    assert version_rows(env) == 0
    assert leftovers(store) == []
    assert staged(store) == []


def test_an_upload_declared_over_the_quota_is_refused_before_it_is_read(
    env: Env, store: Path
) -> None:
    ds = make_dataset(env, "alice", "nlp", visibility="project")
    url = f"{API}/{ds}/upload"
    huge = {"CONTENT_LENGTH": str(50 * 2**30)}  # what a client announces, before any byte
    r = env.api("alice").post(url, data=b"", environ_overrides=huge)
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    assert "larger than the project's dataset quota left (390.6 KiB)" in r.json["message"]
    # the permission checks still come first
    assert env.api("dave").post(url, data=b"", environ_overrides=huge).status_code == 404
    assert env.api("gina").post(url, data=b"", environ_overrides=huge).status_code == 403
    assert version_rows(env) == 0
    assert leftovers(store) == []


def test_a_zip_link_is_refused(env: Env, store: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        info = zipfile.ZipInfo("link")
        info.external_attr = 0o120777 << 16
        z.writestr(info, "/etc/passwd")
    ds = make_dataset(env, "alice", "nlp")
    r = upload(env, "alice", ds, {"l.zip": out.getvalue()})
    assert r.status_code == 422
    assert "links are not allowed" in str(r.json["errors"])
    assert leftovers(store) == []
    assert version_rows(env) == 0


def test_quota_counts_every_version_of_the_project(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    other = make_dataset(env, "alice", "nlp", name="dogs")
    blob = os.urandom(180_000)
    for _ in range(2):
        assert upload(env, "alice", ds, {"b.bin": blob}).status_code == 201
    r = upload(env, "alice", other, {"b.bin": blob})  # 3 x 180 kB > 400 kB
    assert r.status_code == 409
    assert r.json["error"] == "quota_exceeded"
    # another project has its own quota
    bob = make_dataset(env, "bob", "vision")
    assert upload(env, "bob", bob, {"b.bin": blob}).status_code == 201


def test_import_from_a_cluster_path(env: Env, store: Path, tmp_path: Path) -> None:
    src = tmp_path / "cluster" / "corpus"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("alpha")
    (src / "sub" / "b.txt").write_text("beta")
    home = tmp_path / "home" / "alice" / "mine"
    home.mkdir(parents=True)
    (home / "c.txt").write_text("gamma")
    ds = make_dataset(env, "alice", "nlp")
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "path", "path": str(src)})
    assert r.status_code == 201, r.json
    assert (r.json["file_count"], r.json["origin"], r.json["source"]) == (2, str(src), "path")
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "path", "path": str(home)})
    assert r.status_code == 201
    assert r.json["file_count"] == 1
    # outside the roots, another user's home, relative, missing, a link inside
    bob_home = tmp_path / "home" / "bob"
    bob_home.mkdir()
    (src / "link").symlink_to("/etc/passwd")
    for path, text in [
        ("/etc", "not under an import root"),
        (str(bob_home), "not under an import root"),
        (str(src / ".." / ".." / "store"), "not under an import root"),
        ("corpus", "absolute"),
        (str(tmp_path / "cluster" / "missing"), "does not exist"),
        (str(src), "links are not allowed"),
    ]:
        r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "path", "path": path})
        assert r.status_code == 422, (path, r.json)
        assert text in str(r.json["errors"]), (path, r.json)
    assert version_rows(env) == 2
    assert staged(store) == []
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "path"})
    assert r.status_code == 422
    assert "path" in r.json["errors"]["json"]


# ---------------------------------------------------------------------------- S3 (moto)
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible server in its own process, on a port free at run time."""
    port = _free_port()
    moto = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(up, timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def s3_stores(endpoint: str) -> dict[str, Any]:
    return {"lab": {"endpoint_url": endpoint, "access_key": "test", "secret_key": "test"}}


def s3_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def test_import_from_and_export_to_s3(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s3_endpoint: str
) -> None:
    store = configure(env, tmp_path, monkeypatch, DATASET_S3_STORES=s3_stores(s3_endpoint))
    s3 = s3_client(s3_endpoint)
    s3.create_bucket(Bucket="raw-data")
    s3.put_object(Bucket="raw-data", Key="set1/a.txt", Body=b"alpha")
    s3.put_object(Bucket="raw-data", Key="set1/img/b.png", Body=png())
    s3.put_object(Bucket="raw-data", Key="set1/dir/", Body=b"")  # a folder marker
    s3.put_object(Bucket="raw-data", Key="other/c.txt", Body=b"not this")
    ds = make_dataset(env, "alice", "nlp")
    body = {"source": "s3", "store": "lab", "bucket": "raw-data", "prefix": "set1"}
    r = env.api("alice").post(f"{API}/{ds}/versions", json=body)
    assert r.status_code == 201, r.json
    assert (r.json["file_count"], r.json["origin"]) == (2, "s3://lab/raw-data/set1")
    files = [f["path"] for f in env.api("alice").get(f"{API}/{ds}/versions/1/files").json]
    assert files == ["a.txt", "img/b.png"]
    # export the version to another bucket and read it back
    s3.create_bucket(Bucket="exports")
    r = env.api("alice").post(
        f"{API}/{ds}/versions/1/export", json={"store": "lab", "bucket": "exports", "prefix": "v1"}
    )
    assert r.status_code == 200
    assert r.json["keys"] == ["v1/a.txt", "v1/img/b.png"]
    assert s3.get_object(Bucket="exports", Key="v1/a.txt")["Body"].read() == b"alpha"
    # bad sources: each a field error, nothing left behind
    for extra, field, text in [
        ({"bucket": "no-such-bucket"}, "bucket", "NoSuchBucket"),
        ({"prefix": "nothing-here"}, "prefix", "There are no objects"),
        ({"store": "elsewhere"}, "store", "There is no store named elsewhere"),
        ({"access_key": "wrong", "secret_key": "wrong", "bucket": "no-such-bucket"}, "bucket", ""),
    ]:
        r = env.api("alice").post(f"{API}/{ds}/versions", json={**body, **extra})
        assert r.status_code == 422, r.json
        assert text in str(r.json["errors"]["json"][field])
    s3.put_object(Bucket="raw-data", Key="evil/../../x", Body=b"x")
    r = env.api("alice").post(f"{API}/{ds}/versions", json={**body, "prefix": "evil"})
    assert r.status_code == 422
    assert "'..'" in str(r.json["errors"])
    s3.put_object(Bucket="raw-data", Key="big/x.bin", Body=b"0" * 200_001)
    r = env.api("alice").post(f"{API}/{ds}/versions", json={**body, "prefix": "big"})
    assert r.status_code == 409
    assert "larger than" in r.json["message"]
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "s3", "store": "lab"})
    assert r.status_code == 422
    assert "bucket" in r.json["errors"]["json"]
    assert version_rows(env) == 1
    assert staged(store) == []


def test_an_unreachable_store_is_a_clear_error(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stores = s3_stores(f"http://127.0.0.1:{_free_port()}")
    configure(env, tmp_path, monkeypatch, DATASET_S3_STORES=stores)
    ds = make_dataset(env, "alice", "nlp")
    body = {"source": "s3", "store": "lab", "bucket": "raw-data"}
    r = env.api("alice").post(f"{API}/{ds}/versions", json=body)
    assert r.status_code == 422
    assert "cannot be reached" in str(r.json["errors"]["json"]["store"])


# ---------------------------------------------------------------------------- reading
def test_files_preview_raw_and_archive(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    files = {
        "notes/readme.md": "# Title\nhello ✓\n".encode(),
        "img/red.png": png(40, 30),
        "bin/blob.dat": b"\x00\x01\x02",
        "x.svg": b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
    }
    assert upload(env, "alice", ds, files).status_code == 201
    api = env.api("alice")
    listed = api.get(f"{API}/{ds}/versions/1/files").json
    assert [f["path"] for f in listed] == sorted(files)
    assert [f["path"] for f in api.get(f"{API}/{ds}/versions/1/files?under=img").json] == [
        "img/red.png"
    ]
    image = api.get(f"{API}/{ds}/versions/1/preview/img/red.png").json
    assert (image["kind"], image["width"], image["height"]) == ("image", 40, 30)
    with api.get(image["url"]) as raw:
        assert raw.status_code == 200
        assert raw.mimetype == "image/png"
        assert raw.data == files["img/red.png"]
    text = api.get(f"{API}/{ds}/versions/1/preview/notes/readme.md").json
    assert text["kind"] == "text"
    assert text["text"] == "# Title\nhello ✓\n"
    assert api.get(f"{API}/{ds}/versions/1/preview/bin/blob.dat").json["kind"] == "binary"
    with api.get(f"{API}/{ds}/versions/1/files/x.svg") as svg:
        assert svg.mimetype == "application/octet-stream"
        assert "attachment" in svg.headers["Content-Disposition"]
        assert svg.headers["X-Content-Type-Options"] == "nosniff"
    for missing in ("nope.txt", "../../etc/passwd", "img"):
        assert api.get(f"{API}/{ds}/versions/1/files/{missing}").status_code == 404
    assert api.get(f"{API}/{ds}/versions/9/files").status_code == 404
    with api.get(f"{API}/{ds}/versions/1/archive") as archive:
        assert archive.status_code == 200
        assert archive.mimetype == "application/gzip"
        assert untar(archive.data) == {f"cats-v1/{k}": v for k, v in files.items()}


def test_mounts_for_job_specs(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp", name="corpus")
    r = env.api("alice").post(f"{API}/{ds}/mounts", json={"mode": "ro"})
    assert r.status_code == 404
    assert "no version yet" in r.json["message"]
    upload(env, "alice", ds, {"a.txt": b"1"})
    upload(env, "alice", ds, {"a.txt": b"2"})
    latest = env.api("alice").post(f"{API}/{ds}/mounts", json={}).json
    v1 = env.api("alice").post(f"{API}/{ds}/mounts", json={"version": 1, "name": "c1"}).json
    assert latest == {"name": "corpus", "path": str(store / str(ds) / "v2"), "mode": "ro",
                      "kind": "data"}  # fmt: skip
    assert v1["path"] == str(store / str(ds) / "v1")
    assert v1["name"] == "c1"
    rw = env.api("alice").post(f"{API}/{ds}/mounts", json={"mode": "rw"}).json
    assert rw["mode"] == "rw"
    assert Path(rw["path"]).is_dir()
    r = env.api("alice").post(f"{API}/{ds}/mounts", json={"mode": "rw", "version": 1})
    assert r.status_code == 422
    # what a job wrote into the workspace becomes the next version
    (Path(rw["path"]) / "out.txt").write_text("written by a job")
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "workspace"})
    assert r.status_code == 201
    assert (r.json["version"], r.json["origin"]) == (3, "workspace")
    # the entries go into a job spec's mounts as they are
    spec = {"name": "reader", "command": ["ls"], "mounts": [latest, {**rw, "name": "out"}]}
    r = env.api("alice").post(
        "/api/v1/jobs/spec", json={"project_id": env.world.projects["nlp"], "spec": spec}
    )
    assert r.status_code == 201, r.json
    _, script, _ = env.slurm.submitted[-1]
    assert f"export AIPOOL_DATA_CORPUS={latest['path']}" in script
    assert f"aipool_check_mount AIPOOL_DATA_OUT {rw['path']} rw" in script


def test_workspace_needs_a_mount_first(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    r = env.api("alice").post(f"{API}/{ds}/versions", json={"source": "workspace"})
    assert r.status_code == 422
    assert "mount it read-write first" in str(r.json["errors"])


def test_dataset_rows_survive_only_with_their_files(env: Env, store: Path) -> None:
    """Every version row points at a complete directory with its manifest."""
    ds = make_dataset(env, "alice", "nlp")
    upload(env, "alice", ds, {"a.txt": b"1", "b.txt": b"2"})
    upload(env, "alice", ds, {"x.tar.gz": b"broken"})
    with env.app.app_context():
        rows = db.session.query(DatasetVersion).all()
        assert [r.version for r in rows] == [1]
        assert db.session.query(Dataset).count() == 1
        path = Path(rows[0].path)
    assert sorted(p.name for p in path.iterdir()) == ["a.txt", "b.txt"]
    assert path.with_name("v1.manifest.json").is_file()


def test_a_version_number_taken_by_another_request_is_a_conflict(env: Env, store: Path) -> None:
    ds = make_dataset(env, "alice", "nlp")
    taken = store / str(ds) / "v1"
    taken.mkdir(parents=True)
    (taken / "theirs.txt").write_text("being made by another request")
    r = upload(env, "alice", ds, {"mine.txt": b"mine"})
    assert r.status_code == 409
    assert "another request" in r.json["message"]
    assert sorted(p.name for p in taken.iterdir()) == ["theirs.txt"]
    assert version_rows(env) == 0
    assert staged(store) == []


def test_a_failure_after_the_files_moved_removes_them(
    env: Env, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = make_dataset(env, "alice", "nlp")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr("portal.datasets.service.record", broken)
    with pytest.raises(RuntimeError, match="went away"):
        upload(env, "alice", ds, {"a.txt": b"1"})
    assert version_rows(env) == 0
    assert leftovers(store) == [str(ds)]  # the dataset's (empty) directory only
    assert staged(store) == []


def test_a_cluster_path_is_read_as_the_caller_by_the_helpers_agent(
    env: Env, store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the root helper, as a portal that is not root uses it: the agent reads as the
    user, so the kernel refuses what they may not read, wherever it lies on the way."""
    monkeypatch.setattr(actas, "running_as_root", lambda: False)
    user = helpersite.someone()
    with helpersite.installed(tmp_path, [], "nogroup") as site:
        shared = site.reachable / "shared"
        shared.mkdir(mode=0o755)
        (shared / "open.txt").write_text("for everyone")
        secret = shared / "secret.txt"
        secret.write_text("another tenant's")
        secret.chmod(0o600)
        closed = site.reachable / "closed"
        (closed / "inner").mkdir(parents=True)
        (closed / "inner" / "x.txt").write_text("x")
        closed.chmod(0o700)
        limits = Limits(max_bytes=10**6, max_file_bytes=10**6, max_files=10)
        env.app.config["ROOT_HELPER"] = site.argv
        try:
            with env.app.test_request_context():
                for path, said in [
                    (shared, "secret.txt"), (closed / "inner", str(closed / "inner")),
                ]:  # fmt: skip
                    staging = tmp_path / f"staging-{path.name}"
                    staging.mkdir()
                    with pytest.raises(ValidationFailed) as caught:
                        sources.copy_as(user, path, staging, Budget(limits), "path")
                    assert f"{said}: {user} may not read it" in str(caught.value.errors)
                secret.chmod(0o644)
                staging = tmp_path / "staging"
                staging.mkdir()
                sources.copy_as(user, shared, staging, Budget(limits), "path")
        finally:
            env.app.config["ROOT_HELPER"] = None
        assert sorted(p.name for p in staging.iterdir()) == ["open.txt", "secret.txt"]
        assert [a["argv"][:3] for a in site.audited()] == [["as-user", user, "pack"]] * 3


def test_a_spec_may_mount_only_what_its_user_may_read(env: Env, store: Path) -> None:
    """Paths inside what the portal keeps are checked before submission: another tenant's
    version or workspace, the portal's own files and others' job directories are refused."""
    private = make_dataset(env, "alice", "nlp", name="mine", visibility="private")
    assert upload(env, "alice", private, {"a.txt": b"alice's"}).status_code == 201
    version = store / str(private) / "v1"
    home = Path(env.app.instance_path)

    def submit(who: str, project: str, path: Path, mode: str = "ro") -> Any:
        spec = {"name": "m", "command": ["ls"], "mounts": [{"name": "x", "path": str(path),
                                                            "mode": mode}]}  # fmt: skip
        body = {"project_id": env.world.projects[project], "spec": spec}
        return env.api(who).post("/api/v1/jobs/spec", json=body)

    refused = [
        ("bob", "vision", version, "ro"),  # another tenant's private version
        ("bob", "vision", store / str(private) / "workspace", "rw"),
        ("bob", "vision", store / str(private), "ro"),
        ("alice", "nlp", version, "rw"),  # versions are read-only
        ("bob", "vision", home / "portal.db", "ro"),  # the portal's own
        ("bob", "vision", home / "users" / "alice", "ro"),  # another user's jobs
    ]
    for who, project, path, mode in refused:
        r = submit(who, project, path, mode)
        assert r.status_code == 422, (who, path, r.json)
        assert "is not yours to mount" in str(r.json["errors"]), path
    r = submit("bob", "vision", home / "users" / "bob" / ".." / "alice")
    assert "'..' is not allowed" in str(r.json["errors"])  # jobspec's own rule
    assert submit("alice", "nlp", version).status_code == 201
    assert submit("bob", "vision", home / "users" / "bob" / "data").status_code == 201
    assert submit("bob", "vision", Path("/srv/public/imagenet")).status_code == 201


@pytest.mark.parametrize(
    ("name", "expected"),
    [("notes", "notes"), ("1st-run", "d-1st-run"), ("实验数据", "d-7"), ("resnet-四分之一", "d-7")],
)
def test_a_mount_is_named_in_ascii_whatever_the_datasets_name(name: str, expected: str) -> None:
    assert service.mount_name(name, 7) == expected
