"""The "try it" form of an inference service, against a real replica process (the program a
replica job runs) and the fake Slurm: before a replica is ready the page says so in words; a
digit drawn on white paper, uploaded as a picture, comes back as its label; a bad picture or a
missing one is a message on the field; another tenant gets 404 and calls nothing; a stopped
service says so. In English and in Chinese."""

from __future__ import annotations

import io
import subprocess
from typing import Any

import pytest
from PIL import Image
from sklearn.datasets import load_digits

from portal.inference import trying
from tests.unit.portal.conftest import Env
from tests.unit.portal.reconciling import reconcile
from tests.unit.portal.test_inference import deployed, start_replica
from tests.unit.portal.test_model_pages import client_of, token_of
from tests.unit.portal.test_registry import clock, reg

__all__ = ["clock", "deployed", "reg"]  # fixtures, used by name
pytestmark = pytest.mark.usefixtures("users_own_files")

Deployed = tuple[Env, dict[str, Any], list[subprocess.Popen[bytes]]]


def drawn_digit(index: int) -> bytes:
    """Digit ``index`` of the bundled set as a person would draw it: dark ink on white paper,
    32x32 pixels."""
    pixels = load_digits().images[index]  # 8x8, 0 (paper) .. 16 (ink)
    grey = Image.new("L", (8, 8))
    grey.putdata([int(255 - v * 255 / 16) for v in pixels.flatten()])
    out = io.BytesIO()
    grey.resize((32, 32), Image.Resampling.NEAREST).save(out, format="PNG")
    return out.getvalue()


def send(client: Any, url: str, token: str, image: bytes | None) -> Any:
    data: dict[str, Any] = {"csrf_token": token}
    if image is not None:
        data["pixels"] = (io.BytesIO(image), "digit.png")
    return client.post(f"{url}/try", data=data, content_type="multipart/form-data")


REFUSED = {
    "en": "pixels: 64 numbers (an 8x8 image, 0-16).",
    "zh": "pixels：64 个数（一张 8x8 图像，取值 0-16）。",
}
SAID = {
    "en": ("Try it", "no replica is ready yet", "Fill this in.", "not an image", "stopped"),
    "zh": ("在线试用", "还没有就绪的副本", "请填写此项。", "不是门户能读取的图像", "已停止"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_try_it_form(deployed: Deployed, lang: str) -> None:
    env, svc, procs = deployed
    heading, starting, missing, not_an_image, stopped = SAID[lang]
    url = f"/inference/{svc['id']}"
    alice = client_of(env, "alice", lang)
    page = alice.get(url).get_data(as_text=True)
    assert heading in page
    assert 'name="pixels"' in page  # the digits take a picture
    token = token_of(alice, url)
    # no replica ready yet: said in words, nothing counted
    r = send(alice, url, token, drawn_digit(0))
    assert r.status_code == 503
    assert starting in r.get_data(as_text=True)
    start_replica(env, svc["replica_jobs"][0]["job_id"], procs)
    reconcile(env)
    digits = load_digits()
    for i in (0, 1, 7):
        r = send(alice, url, token, drawn_digit(i))
        assert r.status_code == 200, r.get_data(as_text=True)
        html = r.get_data(as_text=True)
        assert f'<td class="label">{digits.target[i]}</td>' in html
        assert 'id="answer-json"' in html
    # the replica's own refusal, through the API, in the caller's language too
    language = {"en": "en", "zh": "zh-CN"}[lang]
    headers = {"X-Service-Token": svc["token"], "Accept-Language": language}
    r = env.app.test_client().post(svc["url"], json={"pixels": [1]}, headers=headers)
    assert r.status_code == 422
    assert r.json["message"] == REFUSED[lang]
    calls = env.api("alice").get(f"/api/v1/inference/{svc['id']}").json["calls"]
    assert calls == 4
    # refused before any call: on the field, in the reader's language
    r = send(alice, url, token, None)
    assert r.status_code == 422
    assert f'id="try-pixels-error">{missing}</span>' in r.get_data(as_text=True)
    r = send(alice, url, token, b"not a picture")
    assert r.status_code == 422
    assert not_an_image in r.get_data(as_text=True).split('id="try-pixels-error">')[1]
    # another tenant: not found, and no call made
    dave = client_of(env, "dave", lang)
    r = send(dave, url, token_of(dave, "/inference"), drawn_digit(0))
    assert r.status_code == 404
    # a viewer of the project may try it (reads the service), a stopped service says so
    gina = client_of(env, "gina", lang)
    r = send(gina, url, token_of(gina, url), drawn_digit(1))
    assert r.status_code == 200
    assert env.api("alice").post(f"/api/v1/inference/{svc['id']}/stop").status_code == 200
    r = send(alice, url, token, drawn_digit(1))
    assert r.status_code == 503
    assert stopped in r.get_data(as_text=True)
    assert env.api("alice").get(f"/api/v1/inference/{svc['id']}").json["calls"] == calls + 1


def test_the_form_follows_the_input_schema() -> None:
    texts = {"type": "object", "required": ["texts"],
             "properties": {"texts": {"type": "array", "items": {"type": "string"}}}}  # fmt: skip
    [field] = trying.fields_of(texts)
    assert (field.name, field.kind, field.required) == ("texts", "lines", True)
    body = trying.body_of([field], {"texts": " good film \n\n bad film "}, {})
    assert body == {"texts": ["good film", "bad film"]}
    rows = trying.answer_rows(body, {"labels": ["positive", "negative"], "scores": [0.9, 0.8]})
    assert rows == [("good film", "positive", 0.9), ("bad film", "negative", 0.8)]
    qa = {"type": "object", "required": ["question", "context"],
          "properties": {"question": {"type": "string"}, "context": {"type": "string"},
                         "image": {"type": "string", "contentEncoding": "base64"}}}  # fmt: skip
    assert [(f.name, f.kind) for f in trying.fields_of(qa)] == [
        ("question", "text"),
        ("context", "text"),
        ("image", "image"),
    ]
    # a dark drawing on white is turned round: ink is the light, as in the bundled digits
    pixels = trying.pixels(drawn_digit(0))
    expected = load_digits().images[0].flatten()
    assert len(pixels) == 64
    assert max(abs(a - b) for a, b in zip(pixels, expected, strict=True)) < 0.1


def test_settings_forms_say_why_in_the_readers_language(deployed: Deployed) -> None:
    env, svc, _ = deployed
    url = f"/inference/{svc['id']}"
    alice = client_of(env, "alice", "zh")
    token = token_of(alice, url)
    before = env.api("alice").get(url.replace("/inference", "/api/v1/inference")).json
    r = alice.post(f"{url}/edit", data={"allow_ips": "nope", "expires_at": "", "csrf_token": token})
    assert "nope 既不是 IP 地址，也不是网段（CIDR）。" in alice.get(r.headers["Location"]).get_data(
        as_text=True
    )
    r = alice.post(f"{url}/scale", data={"replicas": "9", "csrf_token": token})
    assert "副本数为 0 到 8。" in alice.get(r.headers["Location"]).get_data(as_text=True)
    r = alice.post(f"{url}/edit", data={"expires_at": "2026-11-01T08:00", "csrf_token": token})
    assert "过期时间必须晚于现在" in alice.get(r.headers["Location"]).get_data(as_text=True)
    # another tenant: 404, nothing changed; a viewer of the project: not offered, refused
    dave = client_of(env, "dave", "zh")
    r = dave.post(
        f"{url}/scale", data={"replicas": "0", "csrf_token": token_of(dave, "/inference")}
    )
    assert r.status_code == 404
    gina = client_of(env, "gina", "zh")
    page = gina.get(url).get_data(as_text=True)
    assert 'id="scale"' not in page
    r = gina.post(f"{url}/scale", data={"replicas": "0", "csrf_token": token_of(gina, url)})
    assert "只有服务的所有者或项目管理员可以修改它。" in gina.get(r.headers["Location"]).get_data(
        as_text=True
    )
    after = env.api("alice").get(url.replace("/inference", "/api/v1/inference")).json
    assert (after["replicas"], after["allow_ips"], after["expires_at"]) == (
        before["replicas"],
        before["allow_ips"],
        before["expires_at"],
    )
