"""The compute catalogue: served by the API and shown on a page, with the stored scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gres.catalogue import Precision
from gres.scores import Score, save_scores
from tests.unit.portal.conftest import Env
from tests.unit.portal.test_pages import login


@pytest.fixture
def scored(env: Env, tmp_path: Path) -> Iterator[Env]:
    path = tmp_path / "scores.json"
    save_scores(
        path,
        [
            Score("a100", Precision.BF16, 312.0, "catalogue", "gpu1", 1_796_000_000.0, "a100-40gb"),
            Score("cpu", Precision.FP32, 0.2, "measured-cpu", "cpu1", 1_796_000_000.0, "numpy"),
        ],
    )
    env.app.config["SCORES_FILE"] = str(path)
    yield env
    env.app.config["SCORES_FILE"] = None


def test_the_api_serves_the_catalogue_with_sources_and_the_scores(scored: Env) -> None:
    r = scored.api("alice").get("/api/v1/catalogue")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    cards = {c["id"]: c for c in body["cards"]}
    assert cards["h100-sxm"]["tflops"] == {
        "fp32": 67.0, "fp16": 989.0, "bf16": 989.0, "fp8": 1979.0, "int8": 1979.0,
    }  # fmt: skip
    assert cards["t4"]["tflops"]["bf16"] is None
    assert cards["ascend-910b"]["gres_types"] == ["910b"]
    assert all(c["source"].startswith("https://") for c in body["cards"])
    assert [(s["kind"], s["source"]) for s in body["scores"]] == [
        ("a100", "catalogue"),
        ("cpu", "measured-cpu"),
    ]


def test_the_api_needs_a_signed_in_user(env: Env) -> None:
    assert env.app.test_client().get("/api/v1/catalogue").status_code == 401


def test_the_page_in_both_languages(scored: Env) -> None:
    client = login(scored, "alice")
    en = client.get("/catalogue", headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert 'data-card="a100-80gb"' in en
    assert 'data-source="catalogue"' in en
    assert "cannot run the benchmark" in en
    assert "NVLink limited to 400 GB/s" in en
    assert "Huawei" in en
    zh = client.get("/catalogue", headers={"Accept-Language": "zh-CN"})
    assert zh.status_code == 200
    zh_page = zh.get_data(as_text=True)
    assert 'data-precision="bf16"' in zh_page
    # the cards' notes and vendors in Chinese too
    assert "NVLink 限制为 400 GB/s" in zh_page
    assert "NVLink limited to 400 GB/s" not in zh_page
    assert "华为" in zh_page


def test_no_scores_yet(env: Env) -> None:
    page = login(env, "alice").get("/catalogue").get_data(as_text=True)
    assert "aipool gres score run" in page
    assert 'id="scores"' not in page
