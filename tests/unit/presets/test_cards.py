"""The presets' cards and catalogue entries: source, licence, size, revision, the published
results (the upstream's with dataset, split and source, or the offline presets' test tool
results) with the metrics named in words, and the command that reproduces them."""

from __future__ import annotations

import dataclasses

import pytest
from flask import Flask
from flask_babel import force_locale

from portal import create_app
from portal.presets.catalog import Preset, get, presets
from portal.registry import cards, words

PUBLISHED = {
    "dataset": "COCO 2017",
    "split": "validation",
    "metrics": {"map": 0.42, "samples": 5000},
    "source": "https://arxiv.org/abs/2005.12872",
}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Flask:
    home = tmp_path_factory.mktemp("portal")
    return create_app({"SECRET_KEY": "k" * 32, "PORTAL_HOME": str(home), "TESTING": True})


def detector() -> Preset:
    base = get("detr-detector")
    assert base is not None
    return dataclasses.replace(
        base,
        revision="1d5f47bd3bdd2c4bbfa585418ffe6da5028b4c0b",
        modelscope="facebook/detr-resnet-50",
        source="https://huggingface.co/facebook/detr-resnet-50",
        params=41_524_768,
        size_mb=166.6,
        published=PUBLISHED,
    )


@pytest.mark.parametrize("locale", ["en", "zh_CN"])
def test_a_hub_presets_card_states_where_it_comes_from_and_its_published_results(
    app: Flask, locale: str
) -> None:
    preset = detector()
    with app.test_request_context(), force_locale(locale):
        text = preset.card()
        map_words = words.metric("map")
        source_line = "Source" if locale == "en" else None
    card = cards.check(text)  # a card the registry accepts
    assert card.meta["datasets"] == ["COCO 2017"]
    assert card.meta["base_model"] == "facebook/detr-resnet-50"
    body = card.body
    assert "(https://huggingface.co/facebook/detr-resnet-50)" in body
    assert "(https://modelscope.cn/models/facebook/detr-resnet-50)" in body
    assert "apache-2.0" in body
    assert "41.5" in body  # million parameters
    assert "166.6" in body  # MB
    assert "`1d5f47bd3bdd2c4bbfa585418ffe6da5028b4c0b`" in body
    assert "COCO 2017" in body
    assert "validation" in body
    assert f"| {map_words} | 0.42 |" in body
    assert "| 5,000 |" in body
    assert "(https://arxiv.org/abs/2005.12872)" in body
    assert (
        "`python -m portal.presets.runtime evaluate --preset detr-detector --mirror MIRROR "
        "--model MIRROR/facebook/detr-resnet-50 --out DIR`" in body
    )
    assert "`aipool models mirror fill detr-detector --from huggingface`" in body
    if source_line:
        assert "## Source" in body
        assert "Published by the model's authors on COCO 2017 (validation split):" in body
    html = cards.render(text)
    assert '<a href="https://arxiv.org/abs/2005.12872"' in html


def test_a_published_result_whose_split_the_upstream_does_not_state(app: Flask) -> None:
    preset = dataclasses.replace(detector(), published={**PUBLISHED, "split": None})
    with app.test_request_context(), force_locale("en"):
        body = cards.split(preset.card()).body
    assert "Published by the model's authors on COCO 2017:" in body
    assert "None" not in body


def test_an_offline_presets_card_keeps_its_test_tool_results(app: Flask) -> None:
    preset = get("digits-classifier")
    assert preset is not None
    results = preset.results()
    assert results is not None
    with app.test_request_context(), force_locale("en"):
        body = cards.split(preset.card()).body
    assert f"| Accuracy (ACC) | {results['metrics']['accuracy']:.4f}" in body
    assert (
        "`python -m portal.presets.runtime selftest --preset digits-classifier --out DIR`" in body
    )
    assert "bsd-3-clause" in body
    assert "Revision" not in body  # nothing mirrored


def test_the_catalogue_entry_carries_the_new_fields() -> None:
    entry = detector().describe()
    assert entry["source"] == "https://huggingface.co/facebook/detr-resnet-50"
    assert entry["published"] == PUBLISHED
    assert (entry["params"], entry["size_mb"]) == (41_524_768, 166.6)
    assert entry["revision"] == "1d5f47bd3bdd2c4bbfa585418ffe6da5028b4c0b"
    assert entry["reproduce"].startswith("python -m portal.presets.runtime evaluate")
    for preset in presets().values():  # every entry of the catalogue describes itself
        described = preset.describe()
        assert described["reproduce"]
        assert (described["source"] is None) == (preset.mirror is None and not preset.source)


def test_results_of_the_test_tool_are_reproduced_by_the_test_tool() -> None:
    minilm = get("minilm-intent")
    assert minilm is not None
    assert minilm.results() is not None
    assert minilm.reproduce() == (
        "python -m portal.presets.runtime selftest --preset minilm-intent --mirror MIRROR --out DIR"
    )
