"""Model registry API: every endpoint, the permission matrix (owner, shared read-only,
shared read-write, expired share, other tenant) with zero leaks, bad input that leaves
nothing behind, and artifacts encrypted at rest once a model crosses tenants."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from portal.audit.models import AuditEvent
from portal.errors import Conflict
from portal.extensions import db
from portal.registry.models import ModelVersion, RegisteredModel
from tests.unit.portal.conftest import Env

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CARD = "---\nlicense: mit\ntags: [digits]\n---\n# A model\n\nIt **works**.\n"


@dataclass
class Clock:
    at: datetime = T0

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def reg(env: Env, tmp_path: Path) -> Iterator[Env]:
    """The app with its model storage, work and mirror directories in ``tmp_path`` and a
    clock the test moves."""
    cfg = env.app.config
    saved = {k: cfg[k] for k in ("MODEL_STORAGE", "MODEL_WORK", "MODEL_MIRROR", "CLOCK")}
    cfg.update(
        MODEL_STORAGE=str(tmp_path / "store"),
        MODEL_WORK=str(tmp_path / "work"),
        MODEL_MIRROR=str(tmp_path / "mirror"),
        CLOCK=Clock(),
    )
    yield env
    cfg.update(saved)


def clock(env: Env) -> Clock:
    c: Clock = env.app.config["CLOCK"]
    return c


def targz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def upload(client: FlaskClient, model_id: int, data: bytes, name: str, **form: str) -> Any:
    return client.post(
        f"/api/v1/models/{model_id}/versions",
        data={"file": (io.BytesIO(data), name), **form},
        content_type="multipart/form-data",
    )


WEIGHTS = {"config.json": b'{"C": 1.0}', "weights/readme.txt": b"plain text weights"}


def make_model(env: Env, who: str = "alice", project: str = "nlp", **extra: Any) -> int:
    r = env.api(who).post(
        "/api/v1/models",
        json={"project_id": env.world.projects[project], "name": "m1", "task": "t", **extra},
    )
    assert r.status_code == 201, r.json
    model_id = int(r.json["id"])
    r = upload(env.api(who), model_id, targz(WEIGHTS), "model.tar.gz", card=CARD)
    assert r.status_code == 201, r.json
    return model_id


def state(env: Env) -> tuple[int, int, int, list[str]]:
    """What a denied call must not change: models, versions, audit events, stored files."""
    with env.app.app_context():
        s = db.session
        models = s.scalar(select(func.count()).select_from(RegisteredModel)) or 0
        versions = s.scalar(select(func.count()).select_from(ModelVersion)) or 0
        events = s.scalar(select(func.count()).select_from(AuditEvent)) or 0
    store = Path(env.app.config["MODEL_STORAGE"])
    files = sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file())
    return models, versions, events, files


# ---------------------------------------------------------------------- endpoints
def test_models_versions_aliases_and_card(reg: Env) -> None:
    alice = reg.api("alice")
    model_id = make_model(reg)
    model = alice.get(f"/api/v1/models/{model_id}").json
    assert (model["owner"], model["access"], model["versions"]) == ("alice", "admin", 1)
    [v1] = alice.get(f"/api/v1/models/{model_id}/versions").json
    assert v1["source"] == "upload"
    assert v1["created_by"] == reg.world.users["alice"]
    assert v1["status"] == "ready"
    assert v1["card_meta"] == {"license": "mit", "tags": ["digits"]}
    assert {f["path"]: f["sha256"] for f in v1["files"]} == {
        k: hashlib.sha256(v).hexdigest() for k, v in WEIGHTS.items()
    }
    assert v1["size_bytes"] == sum(len(v) for v in WEIGHTS.values())
    with alice.get(f"/api/v1/models/{model_id}/versions/1/files/weights/readme.txt") as got:
        assert got.status_code == 200
        assert got.data == WEIGHTS["weights/readme.txt"]
    assert alice.get(f"/api/v1/models/{model_id}/versions/1/files/nope").status_code == 404
    html = alice.get(f"/api/v1/models/{model_id}/versions/1/card")
    assert html.status_code == 200
    assert b"<strong>works</strong>" in html.data

    r = alice.patch(
        f"/api/v1/models/{model_id}/versions/1",
        json={"status": "production", "tags": {"stage": "blue"}},
    )
    assert r.status_code == 200
    assert r.json["status"] == "production"
    assert r.json["tags"] == {"stage": "blue"}
    r = alice.patch(f"/api/v1/models/{model_id}/versions/1", json={"tags": {"stage": None}})
    assert r.json["tags"] == {}

    assert (
        alice.put(f"/api/v1/models/{model_id}/aliases/champion", json={"version": 1}).status_code
        == 200
    )
    assert alice.get(f"/api/v1/models/{model_id}/aliases/champion").json["number"] == 1
    assert alice.get(f"/api/v1/models/{model_id}").json["aliases"] == {"champion": 1}
    assert alice.put(f"/api/v1/models/{model_id}/aliases/x", json={"version": 9}).status_code == 404
    # an alias is a letter, then letters, digits, _ and -: no other path names one
    bad = alice.put(f"/api/v1/models/{model_id}/aliases/1bad", json={"version": 1})
    assert bad.status_code == 404
    assert alice.delete(f"/api/v1/models/{model_id}/aliases/champion").status_code == 204
    assert alice.get(f"/api/v1/models/{model_id}/aliases/champion").status_code == 404

    r = alice.patch(
        f"/api/v1/models/{model_id}", json={"description": "new", "visibility": "project"}
    )
    assert r.status_code == 200
    assert r.json["visibility"] == "project"
    listed = alice.get("/api/v1/models?q=m1").json
    assert [m["id"] for m in listed] == [model_id]
    dup = alice.post("/api/v1/models", json={"project_id": reg.world.projects["nlp"], "name": "m1"})
    assert dup.status_code == 409

    assert alice.delete(f"/api/v1/models/{model_id}/versions/1").status_code == 204
    assert alice.get(f"/api/v1/models/{model_id}/versions/1").status_code == 404
    assert alice.delete(f"/api/v1/models/{model_id}").status_code == 204
    assert alice.get(f"/api/v1/models/{model_id}").status_code == 404
    assert state(reg)[3] == []  # the files went with them


def test_zip_upload_and_safetensors_parameters(reg: Env) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}}).encode()
    tensors = len(header).to_bytes(8, "little") + header + bytes(48)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("model.safetensors", tensors)
        zf.writestr("config.json", "{}")
    model_id = make_model(reg)
    r = upload(reg.api("alice"), model_id, buf.getvalue(), "m.zip")
    assert r.status_code == 201, r.json
    assert r.json["parameters"] == 12
    assert r.json["number"] == 2


def test_import_hugging_face_and_modelscope_layouts(reg: Env, tmp_path: Path) -> None:
    root = tmp_path / "hub"
    hf = root / "org" / "tiny"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    (hf / "README.md").write_text(
        "---\npipeline_tag: text-classification\nlibrary_name: transformers\n---\n# Tiny\n"
    )
    (hf / ".gitattributes").write_text("*.bin lfs")
    ms = root / "ms"
    ms.mkdir()
    (ms / "configuration.json").write_text('{"framework": "pytorch"}')
    reg.app.config["MODEL_IMPORT_ROOTS"] = [str(root)]
    try:
        alice = reg.api("alice")
        r = alice.post(
            "/api/v1/models", json={"project_id": reg.world.projects["nlp"], "name": "hf"}
        )
        model_id = r.json["id"]
        r = alice.post(f"/api/v1/models/{model_id}/versions/import", json={"path": str(hf)})
        assert r.status_code == 201, r.json
        assert r.json["source"] == "huggingface"
        assert sorted(f["path"] for f in r.json["files"]) == ["README.md", "config.json"]
        model = alice.get(f"/api/v1/models/{model_id}").json
        assert (model["task"], model["framework"]) == ("text-classification", "transformers")
        r = alice.post(f"/api/v1/models/{model_id}/versions/import", json={"path": str(ms)})
        assert r.json["source"] == "modelscope"
        outside = alice.post(f"/api/v1/models/{model_id}/versions/import", json={"path": "/etc"})
        assert outside.status_code == 422
        assert "import root" in outside.json["message"]
        empty = root / "empty"
        empty.mkdir()
        r = alice.post(f"/api/v1/models/{model_id}/versions/import", json={"path": str(empty)})
        assert r.status_code == 422
        assert "layout" in r.json["message"]
    finally:
        reg.app.config["MODEL_IMPORT_ROOTS"] = []


# ---------------------------------------------------------------------- the permission matrix
def _share(env: Env, model_id: int, user: str, mode: str, expires: datetime | None = None) -> int:
    body: dict[str, Any] = {
        "grantee_kind": "user",
        "grantee_id": env.world.users[user],
        "mode": mode,
    }
    if expires:
        body["expires_at"] = expires.isoformat()
    r = env.api("alice").post(f"/api/v1/models/{model_id}/shares", json=body)
    assert r.status_code == 201, r.json
    return int(r.json["id"])


READS = [
    ("get", "/api/v1/models/{m}", None),
    ("get", "/api/v1/models/{m}/versions", None),
    ("get", "/api/v1/models/{m}/versions/1", None),
    ("get", "/api/v1/models/{m}/versions/1/card", None),
    ("get", "/api/v1/models/{m}/evaluations", None),
    ("get", "/api/v1/models/{m}/versions/1/evaluations", None),
]
WRITES = [
    ("patch", "/api/v1/models/{m}/versions/1", {"tags": {"k": "v"}}),
    ("patch", "/api/v1/models/{m}", {"description": "changed"}),
    ("put", "/api/v1/models/{m}/aliases/best", {"version": 1}),
    ("post", "/api/v1/models/{m}/versions/import", {"path": "/nonexistent"}),
]
ADMIN = [
    ("get", "/api/v1/models/{m}/shares", None),
    ("post", "/api/v1/models/{m}/shares", {"grantee_kind": "user", "grantee_id": 1}),
    ("patch", "/api/v1/models/{m}", {"visibility": "private"}),
    ("delete", "/api/v1/models/{m}/versions/1", None),
    ("delete", "/api/v1/models/{m}", None),
]


def _call(client: FlaskClient, method: str, url: str, body: Any) -> int:
    kwargs = {"json": body} if body is not None else {}
    status: int = getattr(client, method)(url, **kwargs).status_code
    return status


def test_permission_matrix_without_leaks(reg: Env) -> None:
    model_id = make_model(reg)
    _share(reg, model_id, "dave", "read")  # another tenant (teaching), read-only
    _share(reg, model_id, "bob", "write")  # same domain, another project, read-write
    _share(reg, model_id, "carol", "write", expires=T0 + timedelta(minutes=5))
    clock(reg).at = T0 + timedelta(minutes=5)  # carol's share ends now
    # expected status per actor: (reads, writes, admin); None = allowed (2xx or a 4xx that is
    # not an access refusal, e.g. 422 for the import's missing path)
    matrix = {
        "alice": (None, None, None),
        "dave": (None, 403, 403),
        "bob": (None, None, 403),
        "carol": (404, 404, 404),
        "tina": (404, 404, 404),
        "nobody": (404, 404, 404),
    }
    for who, (reads, writes, admin) in matrix.items():
        client = reg.api(who)
        for group, expected in ((READS, reads), (WRITES, writes), (ADMIN[:3], admin)):
            for method, url, body in group:
                before = state(reg)
                status = _call(client, method, url.format(m=model_id), body)
                if expected is None:
                    assert status not in (401, 403, 404), (who, method, url, status)
                else:
                    assert status == expected, (who, method, url, status)
                    assert state(reg) == before, (who, method, url)  # nothing changed
        listed = {m["id"] for m in client.get("/api/v1/models").json}
        assert (model_id in listed) == (reads is None), who
        # the project's other models, the files and the shares stay hidden too
        with client.get(f"/api/v1/models/{model_id}/versions/1/files/config.json") as r:
            assert r.status_code == (404 if reads is not None else 409)  # encrypted: jobs only
    # the owner's destructive calls last
    for method, url, body in ADMIN[3:]:
        for who in ("dave", "bob", "carol", "tina"):
            before = state(reg)
            status = _call(reg.api(who), method, url.format(m=model_id), body)
            assert status in (403, 404), (who, url, status)
            assert state(reg) == before
        assert _call(reg.api("alice"), method, url.format(m=model_id), body) == 204


def test_an_expired_share_is_refused_the_moment_it_expires(reg: Env) -> None:
    model_id = make_model(reg)
    ends = T0 + timedelta(hours=1)
    _share(reg, model_id, "dave", "read", expires=ends)
    dave = reg.api("dave")
    clock(reg).at = ends - timedelta(microseconds=1)
    assert dave.get(f"/api/v1/models/{model_id}").status_code == 200
    assert model_id in {m["id"] for m in dave.get("/api/v1/models").json}
    clock(reg).at = ends
    assert dave.get(f"/api/v1/models/{model_id}").status_code == 404
    assert dave.get("/api/v1/models").json == []
    past = reg.api("alice").post(
        f"/api/v1/models/{model_id}/shares",
        json={"grantee_kind": "user", "grantee_id": 1, "expires_at": ends.isoformat()},
    )
    assert past.status_code == 422
    assert "future" in past.json["message"]


def test_visibility_levels(reg: Env) -> None:
    model_id = make_model(reg)
    seen = lambda who: reg.api(who).get(f"/api/v1/models/{model_id}").status_code  # noqa: E731
    assert [seen(u) for u in ("gina", "bob", "dave")] == [404, 404, 404]
    reg.api("alice").patch(f"/api/v1/models/{model_id}", json={"visibility": "project"})
    assert [seen(u) for u in ("gina", "bob", "dave")] == [200, 404, 404]  # gina reads nlp
    reg.api("alice").patch(f"/api/v1/models/{model_id}", json={"visibility": "domain"})
    assert [seen(u) for u in ("gina", "bob", "dave")] == [200, 200, 404]
    reg.api("alice").patch(f"/api/v1/models/{model_id}", json={"visibility": "public"})
    assert [seen(u) for u in ("gina", "bob", "dave")] == [200, 200, 200]
    # sam may only submit jobs in nlp (no project.read): a project model stays hidden
    reg.api("alice").patch(f"/api/v1/models/{model_id}", json={"visibility": "project"})
    assert seen("sam") == 404
    # the project's manager and the domain admin administer it
    assert reg.api("erin").get(f"/api/v1/models/{model_id}").json["access"] == "admin"


def test_shares_by_project_and_tenant(reg: Env) -> None:
    model_id = make_model(reg)
    alice = reg.api("alice")
    r = alice.post(
        f"/api/v1/models/{model_id}/shares",
        json={"grantee_kind": "project", "grantee_id": reg.world.projects["cs101"]},
    )
    assert r.status_code == 201
    assert reg.api("dave").get(f"/api/v1/models/{model_id}").json["access"] == "read"
    assert reg.api("tina").get(f"/api/v1/models/{model_id}").status_code == 404  # admin, not member
    r = alice.post(
        f"/api/v1/models/{model_id}/shares",
        json={
            "grantee_kind": "domain",
            "grantee_id": reg.world.domains["teaching"],
            "mode": "write",
        },
    )
    assert reg.api("tina").get(f"/api/v1/models/{model_id}").json["access"] == "write"
    shares = alice.get(f"/api/v1/models/{model_id}/shares").json
    assert {(s["grantee_kind"], s["mode"]) for s in shares} == {
        ("project", "read"),
        ("domain", "write"),
    }
    share_id = next(s["id"] for s in shares if s["grantee_kind"] == "domain")
    assert alice.delete(f"/api/v1/models/{model_id}/shares/{share_id}").status_code == 204
    assert reg.api("tina").get(f"/api/v1/models/{model_id}").status_code == 404
    bad = alice.post(
        f"/api/v1/models/{model_id}/shares", json={"grantee_kind": "user", "grantee_id": 99999}
    )
    assert bad.status_code == 422


def test_artifacts_shared_across_tenants_are_encrypted_at_rest(reg: Env) -> None:
    model_id = make_model(reg)
    store = Path(reg.app.config["MODEL_STORAGE"])
    plain = store / str(model_id) / "1" / "weights" / "readme.txt"
    assert plain.read_bytes() == WEIGHTS["weights/readme.txt"]
    _share(reg, model_id, "bob", "read")  # same tenant: stays plain
    assert plain.is_file()
    _share(reg, model_id, "dave", "read")  # another tenant: encrypted with research's key
    assert not plain.exists()
    sealed = plain.with_name("readme.txt.enc").read_bytes()
    assert WEIGHTS["weights/readme.txt"] not in sealed
    version = reg.api("alice").get(f"/api/v1/models/{model_id}/versions/1").json
    assert version["encrypted"] is True
    r = reg.api("dave").get(f"/api/v1/models/{model_id}/versions/1/files/weights/readme.txt")
    assert r.status_code == 409
    assert "decrypted only for jobs" in r.json["message"]
    # a new version of the shared model is encrypted as it arrives
    r = upload(reg.api("alice"), model_id, b"v2 weights", "w.bin")
    assert r.json["encrypted"] is True
    assert (store / str(model_id) / "2" / "w.bin.enc").is_file()
    # only an authorised job gets the plain files, checked against their sha256
    from portal.registry import runs, storage

    with reg.app.app_context():
        v = db.session.scalar(
            select(ModelVersion).where(ModelVersion.model_id == model_id, ModelVersion.number == 1)
        )
        assert v is not None
        job = Path(reg.app.config["MODEL_WORK"]) / "job"
        job.mkdir(parents=True)
        dest = runs.stage_model(v, job / "model", "alice")
        assert (dest / "weights" / "readme.txt").read_bytes() == WEIGHTS["weights/readme.txt"]
        other = storage.tenant_key(reg.world.domains["teaching"])
        with pytest.raises(Conflict, match="cannot be decrypted"):
            storage.write_tar(store / str(model_id) / "1", v.files, other, io.BytesIO())


# ---------------------------------------------------------------------- bad input
def _bad_upload(env: Env, model_id: int, data: bytes, name: str, message: str, **form: str) -> None:
    before = state(env)
    r = upload(env.api("alice"), model_id, data, name, **form)
    assert r.status_code == 422, r.json
    assert message in r.json["message"], r.json
    assert state(env) == before  # no row, no event, no file
    incoming = Path(env.app.config["MODEL_STORAGE"]) / ".incoming"
    assert not incoming.exists() or not any(incoming.iterdir())


def test_bad_uploads_get_a_clear_error_and_leave_nothing(reg: Env, tmp_path: Path) -> None:
    m = make_model(reg)
    _bad_upload(reg, m, b"\x1f\x8b\x08\x00garbage", "m.tar.gz", "The archive is corrupt")
    _bad_upload(reg, m, b"PK\x03\x04 not a zip", "m.zip", "The archive is corrupt")
    _bad_upload(reg, m, targz({"../escape.txt": b"x"}), "m.tar.gz", "outside the archive")
    _bad_upload(reg, m, targz({"/etc/passwd": b"x"}), "m.tgz", "outside the archive")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        link = tarfile.TarInfo("link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    _bad_upload(reg, m, buf.getvalue(), "m.tar", "is a link")
    corrupt = "weights file model.safetensors is corrupt"
    _bad_upload(reg, m, b"\xff" * 16, "model.safetensors", corrupt)
    _bad_upload(reg, m, b"", "empty.bin", "empty")
    _bad_upload(
        reg,
        m,
        b"weights",
        "w.bin",
        "may not contain active content: <script> tag",
        card="# Card\n\n<script>alert(1)</script>\n",
    )
    _bad_upload(
        reg, m, b"weights", "w.bin", "onerror attribute", card='<img src="x" onerror="alert(1)">'
    )
    reg.app.config["MODEL_UPLOAD_MAX_BYTES"] = 1000
    try:
        _bad_upload(reg, m, bytes(1001), "big.bin", "larger than 1,000 B")
        _bad_upload(
            reg, m, targz({"a.bin": bytes(900), "b.bin": bytes(900)}), "m.tar.gz", "unpacks to more"
        )
    finally:
        reg.app.config["MODEL_UPLOAD_MAX_BYTES"] = 512 * 1024**2
    before = state(reg)
    r = reg.api("alice").patch(
        f"/api/v1/models/{m}/versions/1",
        json={"card": "<script>x</script>"},
    )
    assert r.status_code == 422
    assert "<script> tag" in r.json["message"]
    assert state(reg) == before
    r = reg.api("alice").post(
        "/api/v1/models", json={"project_id": reg.world.projects["nlp"], "name": "../x"}
    )
    assert r.status_code == 422


def test_lineage_names_only_a_job_the_uploader_may_see(env: Env, reg: Env) -> None:
    model = make_model(env)
    theirs = env.slurm.add_job("bob", "vision")
    mine = env.slurm.add_job("alice", "nlp")
    alice = env.api("alice")
    r = upload(alice, model, b"w", "w.bin", job_id=str(theirs))
    assert r.status_code == 422, r.json
    assert "No job of yours" in r.json["errors"]["json"]["job_id"][0]
    assert upload(alice, model, b"w", "w.bin", job_id=str(2**40)).status_code == 422
    r = upload(alice, model, b"w", "w.bin", job_id=str(mine))
    assert r.status_code == 201, r.json
    assert r.json["job_id"] == mine
