"""The language generation programs on tiny random-weight models of their architectures, in a
temporary mirror: fine-tune (a few steps, safetensors out), evaluate (the one report shape),
predict, and the requests they refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from portal.presets.catalog import presets
from portal.presets.programs import KINDS
from portal.presets.textgen_hub import HubKind
from tests.presets.tiny_textgen import BUILDERS

METRICS = {
    "opus-mt-zh-en": {"bleu", "chrf", "samples"},
    "mt5-summariser": {"rouge1", "rouge2", "rougeL", "samples"},
    "qwen-chat": {"perplexity", "samples"},
    "gpt2-chinese": {"perplexity", "samples"},
}
REQUESTS: dict[str, tuple[dict[str, Any], str]] = {
    "opus-mt-zh-en": ({"text": "今天天气很好。", "max_new_tokens": 4}, "translation"),
    "mt5-summariser": ({"text": "冷空气来袭，周末气温将下降。", "max_new_tokens": 4}, "summary"),
    "qwen-chat": (
        {"messages": [{"role": "user", "content": "你好"}], "max_new_tokens": 4},
        "reply",
    ),
    "gpt2-chinese": ({"prompt": "今天", "max_new_tokens": 4}, "text"),
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mirror")
    for build in BUILDERS.values():
        build(root)
    return root


def kind_of(name: str, mirror: Path) -> HubKind:
    kind = KINDS[presets()[name].runtime or ""](mirror)
    assert isinstance(kind, HubKind)
    return kind


def first_version(tmp: Path, name: str, **extra: Any) -> Path:
    """What importing the preset stores as version 1: its configuration only."""
    base = tmp / "v1"
    base.mkdir()
    preset = presets()[name]
    (base / "config.json").write_text(json.dumps({"preset": name, "base": preset.mirror, **extra}))
    return base


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fine_tune_evaluate_predict(name: str, mirror: Path, tmp_path: Path) -> None:
    kind = kind_of(name, mirror)
    base = first_version(tmp_path, name, steps=2)
    out = tmp_path / "v2"
    out.mkdir()
    result = kind.train(base, out)
    assert (result["preset"], result["steps"], result["base"]) == (name, 2, presets()[name].mirror)
    assert result["loss"] == result["loss"]  # a number, not NaN
    files = {p.name for p in out.iterdir()}
    assert "model.safetensors" in files
    assert not {f for f in files if f.endswith((".bin", ".pt", ".pkl"))}
    assert kind.weights(out) == out  # the fine-tune holds its weights itself

    loaded = kind.load(out)
    x, y = kind.test_set()
    report = kind.evaluate(loaded, x, y, tmp_path)
    assert report["task"] == presets()[name].task
    assert set(report["metrics"]) == METRICS[name]
    assert report["metrics"]["samples"] == len(y)
    assert (report["per_class"], report["labels"], report["confusion"]) == ([], [], [])
    if "perplexity" in report["metrics"]:
        assert report["metrics"]["perplexity"] > 1.0
    json.dumps(report)  # what the job writes as metrics.json

    body, field = REQUESTS[name]
    answer = kind.respond(kind.predict(loaded, kind.parse(body)))
    assert set(answer) == {field}
    assert isinstance(answer[field], str)


def test_the_evaluation_is_the_same_twice_and_a_fine_tune_changes_it(
    mirror: Path, tmp_path: Path
) -> None:
    kind = kind_of("gpt2-chinese", mirror)
    base = first_version(tmp_path, "gpt2-chinese", steps=4, lr=0.01)
    x, y = kind.test_set()
    before = kind.evaluate(kind.load(base), x, y, tmp_path)["metrics"]["perplexity"]
    assert kind.evaluate(kind.load(base), x, y, tmp_path)["metrics"]["perplexity"] == before
    out = tmp_path / "v2"
    out.mkdir()
    kind.train(base, out)
    after = kind.evaluate(kind.load(out), x, y, tmp_path)["metrics"]["perplexity"]
    assert after < before  # four steps on Chinese text lower the perplexity of Chinese text


def test_datasets_are_read_from_jsonl(mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    pairs = [{"source": "你好", "target": "Hello"}, {"source": "谢谢", "target": "Thanks"}]
    (data / "train.jsonl").write_text("\n".join(json.dumps(p) for p in pairs) + "\n")
    assert kind_of("opus-mt-zh-en", mirror).from_directory(data) == (
        ["你好", "谢谢"], ["Hello", "Thanks"],
    )  # fmt: skip
    chat = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]
    (data / "train.jsonl").write_text(json.dumps({"messages": chat}) + "\n")
    assert kind_of("qwen-chat", mirror).from_directory(data) == ([chat[:1]], ["你好！"])
    (data / "train.jsonl").write_text('{"source": "no target"}\n')
    with pytest.raises(ValueError, match=r"train.jsonl:1"):
        kind_of("opus-mt-zh-en", mirror).from_directory(data)


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("opus-mt-zh-en", {}, "text: a text"),
        ("opus-mt-zh-en", {"text": "x" * 10_001}, "text: a text"),
        ("mt5-summariser", {"text": "好", "max_new_tokens": 257}, "max_new_tokens"),
        ("mt5-summariser", {"text": "好", "max_new_tokens": True}, "max_new_tokens"),
        ("gpt2-chinese", {"prompt": " "}, "prompt: a text"),
        ("qwen-chat", {"messages": []}, "messages: a list"),
        ("qwen-chat", {"messages": [{"role": "root", "content": "x"}]}, "messages: a list"),
        ("qwen-chat", {"messages": [{"role": "assistant", "content": "x"}]}, "the user's"),
    ],
)
def test_bad_requests_get_a_clear_error(
    name: str, body: dict[str, Any], message: str, mirror: Path
) -> None:
    with pytest.raises(ValueError, match=message):
        kind_of(name, mirror).parse(body)


def test_a_missing_repository_names_the_command_that_fills_it(tmp_path: Path) -> None:
    kind = kind_of("qwen-chat", tmp_path / "empty-mirror")
    with pytest.raises(FileNotFoundError, match="aipool models mirror fill qwen-chat"):
        kind.load(first_version(tmp_path, "qwen-chat"))


def test_catalogue_entries_of_the_generation_presets() -> None:
    for name in BUILDERS:
        preset = presets()[name]
        assert preset.runnable
        assert preset.source
        assert preset.size_mb
        assert {"model.safetensors", "config.json"} <= set(preset.files)
        for metric in (preset.published or {}).get("metrics", {}):
            assert metric in METRICS[name]


def test_the_card_is_the_one_slurm_gave(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import torch

    from portal.presets.textgen_hub import device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device() == "cpu"  # cards on the node, none granted to the job
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert device() == "cuda"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0")
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # not installed
    assert device() == "cpu"
