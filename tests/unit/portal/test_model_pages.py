"""The model pages' forms in both languages: a new model, a version uploaded or imported from
the mirror, a share with an expiry day and its withdrawal; each valid, invalid (the message on
its field, in the reader's language) and tried by another tenant (404, nothing changed). The
page names the metrics in words and lays out the per-class table of an evaluation."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from portal.extensions import db
from portal.registry.models import Evaluation, ModelShare, ModelVersion
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import csrf_of, login
from tests.unit.portal.test_registry import T0, WEIGHTS, make_model, reg, state, targz

__all__ = ["reg"]  # the fixture, used by name


def client_of(env: Env, who: str, lang: str) -> FlaskClient:
    client = login(env, who)
    client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "zh-CN,zh;q=0.9" if lang == "zh" else "en"
    return client


def token_of(client: FlaskClient, url: str) -> str:
    return csrf_of(client.get(url).get_data(as_text=True))


def error_on(html: str, field_id: str) -> str:
    """The messages shown under the input ``field_id`` (the field macro's spans)."""
    start = html.index(f'id="{field_id}"')
    rest = html[start:]
    end = rest.find("</label>")
    return rest[end:].split("<label", 1)[0]


@pytest.mark.parametrize(
    ("lang", "created", "bad_name"),
    [
        ("en", "Model vit created", "then letters, digits"),
        ("zh", "已创建模型 vit", "字母、数字"),
    ],
)
def test_new_model_form(reg: Env, lang: str, created: str, bad_name: str) -> None:
    client = client_of(reg, "alice", lang)
    token = token_of(client, "/models")
    nlp = reg.world.projects["nlp"]
    form = {
        "project_id": nlp,
        "name": "vit",
        "task": "image-classification",
        "framework": "PyTorch",
        "visibility": "project",
        "description": "",
        "csrf_token": token,
    }
    r = client.post("/models", data=form)
    assert r.status_code == 302, r.get_data(as_text=True)
    page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert created in page
    assert ("Image classification" if lang == "en" else "图像分类") in page
    before = state(reg)
    r = client.post("/models", data={**form, "name": "-no good-"})
    assert r.status_code == 422
    assert bad_name in error_on(r.get_data(as_text=True), "name")
    assert state(reg) == before
    # another tenant's project is not a choice: refused, nothing made
    dave = client_of(reg, "dave", lang)
    r = dave.post("/models", data={**form, "csrf_token": token_of(dave, "/models")})
    assert r.status_code == 422  # not one of dave's projects
    assert state(reg) == before


@pytest.mark.parametrize(
    ("lang", "uploaded", "too_big", "not_found"),
    [
        ("en", "Version 2 uploaded.", "larger than", "Model not found."),
        ("zh", "已上传版本 2。", "超过", "未找到该模型。"),
    ],
)
def test_upload_form(reg: Env, lang: str, uploaded: str, too_big: str, not_found: str) -> None:
    model = make_model(reg)
    client = client_of(reg, "alice", lang)
    url = f"/models/{model}"
    page = client.get(url).get_data(as_text=True)
    assert "data-upload" in page
    assert 'id="upload-i18n"' in page
    assert "upload.js" in page
    data = {"file": (io.BytesIO(targz(WEIGHTS)), "m.tar.gz"), "csrf_token": csrf_of(page)}
    r = client.post(f"{url}/versions/upload", data=data, content_type="multipart/form-data")
    assert r.status_code == 302
    assert uploaded in client.get(url).get_data(as_text=True)
    [row] = reg.api("alice").get(f"/api/v1/models/{model}/versions/2").json["files"][:1]
    assert row["path"] == "config.json"
    # too large: the message on the file field, no version, nothing left in .incoming
    reg.app.config["MODEL_UPLOAD_MAX_BYTES"] = 100
    before = state(reg)
    data = {"file": (io.BytesIO(bytes(101)), "w.bin"), "csrf_token": csrf_of(page)}
    r = client.post(f"{url}/versions/upload", data=data, content_type="multipart/form-data")
    reg.app.config["MODEL_UPLOAD_MAX_BYTES"] = 512 * 1024**2
    assert r.status_code == 422
    assert too_big in error_on(r.get_data(as_text=True), "upload-file")
    assert state(reg) == before
    # no file: the form says so
    r = client.post(f"{url}/versions/upload", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 422
    # another tenant: not found, nothing changed
    dave = client_of(reg, "dave", lang)
    data = {"file": (io.BytesIO(b"w"), "w.bin"), "csrf_token": token_of(dave, "/models")}
    r = dave.post(f"{url}/versions/upload", data=data, content_type="multipart/form-data")
    assert r.status_code == 404
    assert not_found in r.get_data(as_text=True)
    assert state(reg) == before
    # no CSRF token: refused
    r = client.post(f"{url}/versions/upload", data={"file": (io.BytesIO(b"w"), "w.bin")})
    assert r.status_code == 400
    assert state(reg) == before


def _mirror_model(env: Env) -> Path:
    path = Path(env.app.config["MODEL_MIRROR"]) / "org" / "tiny-bert"
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (path / "README.md").write_text("---\npipeline_tag: fill-mask\n---\n# Tiny\n")
    (path / "weights.bin").write_bytes(b"\0" * 64)
    return path


@pytest.mark.parametrize(
    ("lang", "imported", "not_a_layout"),
    [
        ("en", "Version 2 imported (Hugging Face layout).", "neither a Hugging Face"),
        ("zh", "已导入版本 2（Hugging Face 格式）。", "既不是 Hugging Face 格式"),
    ],
)
def test_import_form_offers_the_mirror(
    reg: Env, lang: str, imported: str, not_a_layout: str
) -> None:
    model = make_model(reg)
    source = _mirror_model(reg)
    (source.parent / "empty").mkdir()
    client = client_of(reg, "alice", lang)
    url = f"/models/{model}"
    page = client.get(url).get_data(as_text=True)
    assert f'<option value="{source}">' in page  # the mirror's models are offered
    assert f'value="{source.parent / "empty"}"' not in page
    token = csrf_of(page)
    r = client.post(f"{url}/versions/import", data={"path": str(source), "csrf_token": token})
    assert r.status_code == 302
    assert imported in client.get(url).get_data(as_text=True)
    version = reg.api("alice").get(f"/api/v1/models/{model}/versions/2").json
    assert version["source"] == "huggingface"
    before = state(reg)
    r = client.post(
        f"{url}/versions/import", data={"path": str(source.parent / "empty"), "csrf_token": token}
    )
    assert r.status_code == 422
    assert not_a_layout in error_on(r.get_data(as_text=True), "import-path")
    r = client.post(f"{url}/versions/import", data={"path": "/etc", "csrf_token": token})
    assert r.status_code == 422
    dave = client_of(reg, "dave", lang)
    data = {"path": str(source), "csrf_token": token_of(dave, "/models")}
    assert dave.post(f"{url}/versions/import", data=data).status_code == 404
    assert state(reg) == before


def shares_of(env: Env, model: int) -> list[tuple[str, int, str | None]]:
    with env.app.app_context():
        rows = db.session.scalars(select(ModelShare).where(ModelShare.model_id == model))
        return [
            (r.grantee_kind, r.grantee_id, r.expires_at.isoformat() if r.expires_at else None)
            for r in rows
        ]


SAID = {
    "en": ("Shared with bob.", "There is no active user named nobody2.",
           "The expiry must be in the future", "The share was withdrawn."),
    "zh": ("已共享给 bob。", "没有名为 nobody2 的有效用户。", "过期时间必须晚于现在",
           "已撤销共享。"),
}  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_share_form_with_an_expiry_day(reg: Env, lang: str) -> None:
    shared, no_user, past, withdrawn = SAID[lang]
    model = make_model(reg)
    client = client_of(reg, "alice", lang)
    url = f"/models/{model}"
    assert login(reg, "bob").get(url).status_code == 404  # not shared yet
    token = token_of(client, url)
    form = {"grantee_kind": "user", "grantee": "bob", "mode": "read", "expires": "2026-12-10",
            "csrf_token": token}  # fmt: skip
    r = client.post(f"{url}/shares", data=form)
    assert r.status_code == 302
    page = client.get(url).get_data(as_text=True)
    assert shared in page
    bob = reg.world.users["bob"]
    # the end of that day in the site's time zone (UTC here)
    assert shares_of(reg, model) == [("user", bob, "2026-12-11T00:00:00+00:00")]
    assert login(reg, "bob").get(url).status_code == 200
    before = shares_of(reg, model)
    r = client.post(f"{url}/shares", data={**form, "grantee": "nobody2"})
    assert r.status_code == 422
    assert no_user in error_on(r.get_data(as_text=True), "share-grantee")
    r = client.post(f"{url}/shares", data={**form, "expires": "2026-11-01"})  # T0 is Nov 30
    assert r.status_code == 422
    assert past in error_on(r.get_data(as_text=True), "share-expires")
    # another tenant cannot share it, nor withdraw the share
    dave = client_of(reg, "dave", lang)
    dave_token = token_of(dave, "/models")
    assert dave.post(f"{url}/shares", data={**form, "csrf_token": dave_token}).status_code == 404
    with reg.app.app_context():
        share_id = db.session.scalar(select(ModelShare.id).where(ModelShare.model_id == model))
    r = dave.post(f"{url}/shares/{share_id}/delete", data={"csrf_token": dave_token})
    assert r.status_code == 404
    assert shares_of(reg, model) == before
    # the owner withdraws it
    r = client.post(f"{url}/shares/{share_id}/delete", data={"csrf_token": token})
    assert withdrawn in client.get(r.headers["Location"]).get_data(as_text=True)
    assert shares_of(reg, model) == []
    assert login(reg, "bob").get(url).status_code == 404


def test_metrics_in_words_and_the_per_class_table(reg: Env) -> None:
    model = make_model(reg)
    with reg.app.app_context():
        version = db.session.scalar(select(ModelVersion).where(ModelVersion.model_id == model))
        assert version is not None
        version.metrics = {"accuracy": 0.91234, "f1": 0.9, "precision": 0.8, "recall": 0.7}
        db.session.add(
            Evaluation(
                version_id=version.id,
                state="succeeded",
                dataset="",
                metrics={**version.metrics, "samples": 1234},
                per_class=[
                    {
                        "label": "cat",
                        "precision": 0.5,
                        "recall": 0.25,
                        "f1": 0.3333,
                        "support": 1200,
                    },
                    {"label": "dog", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 34},
                ],
                labels=["cat", "dog"],
                confusion=[[300, 900], [0, 34]],
                created_at=T0,
            )
        )
        db.session.commit()
    en = client_of(reg, "alice", "en").get(f"/models/{model}").get_data(as_text=True)
    assert "Accuracy (ACC)" in en
    assert "F1 score (F1)" in en
    assert "Recall (R)" in en
    assert "0.9123" in en
    assert "1,234 samples" in en  # the count in the locale's way
    per_class = en[en.index('class="per-class"') :]
    assert (
        '<th scope="row">cat</th><td>0.5000</td><td>0.2500</td><td>0.3333</td><td>1,200</td>'
        in per_class
    )
    zh = client_of(reg, "alice", "zh").get(f"/models/{model}").get_data(as_text=True)
    assert "准确率 ACC" in zh
    assert "精确率 P" in zh
    assert "召回率 R" in zh
    assert "F1 值 F1" in zh
    assert "样本数" in zh
    assert "混淆矩阵" in zh
    assert '<html lang="zh-CN">' in zh
