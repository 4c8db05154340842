"""The Chinese understanding presets' programs on tiny random-weight models of their
architectures, in a temporary mirror, on the CPU: evaluate version 1 (the mirror's weights),
fine-tune, load the fine-tuned version, and the served request and answer against the
catalogue's schemas."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from portal.presets import runtime
from portal.presets.catalog import presets
from portal.presets.extraction import Keywords, ZhQa
from portal.presets.kinds import Kind
from portal.presets.programs import KINDS
from portal.presets.understanding import ZhNer, ZhSentiment, device
from tests.presets.tiny_understanding import BUILDERS

NAMES = sorted(BUILDERS)
VOCABULARY = {"accuracy", "f1", "precision", "recall", "samples", "exact_match"}
EXAMPLES: dict[str, dict[str, Any]] = {
    "roberta-sentiment-zh": {"texts": ["物流很快，非常满意。", "质量太差了。"]},
    "bert-ner-zh": {"text": "李明昨天在北京参加了会议。"},
    "pert-qa-zh": {
        "question": "故宫旧称什么？",
        "context": "故宫是明清两代的皇家宫殿，旧称紫禁城。",
    },
    "keybert-keywords": {
        "text": "人工智能正在改变医疗行业，深度学习辅助医生分析医学影像。",
        "top_k": 3,
    },
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mirror")
    for build in BUILDERS.values():
        build(root)
    return root


def kind_of(name: str, mirror: Path | None) -> Kind:
    preset = presets()[name]
    assert preset.runtime is not None
    return KINDS[preset.runtime](mirror)


def version_1(tmp: Path, name: str) -> Path:
    """What importing the preset stores: its name and hub repository, no weights."""
    model = tmp / "v1"
    model.mkdir(exist_ok=True)
    repo = presets()[name].mirror
    (model / "config.json").write_text(json.dumps({"preset": name, "base": repo}))
    return model


def test_the_four_presets_run_here_and_their_tiny_models_are_tiny(mirror: Path) -> None:
    assert {presets()[n].runtime for n in NAMES} == {"zh_sentiment", "zh_ner", "zh_qa", "keywords"}
    for name in NAMES:
        repo = mirror / str(presets()[name].mirror)
        size = sum(f.stat().st_size for f in repo.rglob("*") if f.is_file())
        assert size < 2 * 1024**2, name
        assert (repo / "config.json").is_file()
        assert not list(repo.rglob("*.bin"))
        assert not list(repo.rglob("*.pkl"))
    assert device() == "cpu"  # no card on this machine


@pytest.mark.parametrize("name", NAMES)
def test_evaluate_version_1_gives_the_one_report_shape(
    name: str, mirror: Path, tmp_path: Path
) -> None:
    kind = kind_of(name, mirror)
    report = runtime.evaluate(kind, version_1(tmp_path, name), tmp_path / "eval")
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text()) == report
    assert set(report) >= {"task", "metrics", "per_class", "labels", "confusion"}
    metrics = report["metrics"]
    assert set(metrics) <= VOCABULARY
    assert metrics["samples"] == len(kind.test_set()[0])
    assert all(0.0 <= v <= 1.0 for k, v in metrics.items() if k != "samples")
    for row in report["per_class"]:
        assert set(row) - {"label"} <= VOCABULARY | {"support"}
    if name == "roberta-sentiment-zh":  # classification: labels and a confusion matrix
        assert report["labels"] == ["negative", "positive"]
        assert sum(map(sum, report["confusion"])) == metrics["samples"]
        assert (tmp_path / "eval" / "confusion.png").read_bytes().startswith(b"\x89PNG")
    else:
        assert report["labels"] == report["confusion"] == []


@pytest.mark.parametrize("name", NAMES)
def test_a_request_and_its_answer_follow_the_catalogue_schemas(
    name: str, mirror: Path, tmp_path: Path
) -> None:
    preset = presets()[name]
    kind = kind_of(name, mirror)
    body = EXAMPLES[name]
    jsonschema.validate(body, preset.input)
    answer = kind.respond(kind.predict(kind.load(version_1(tmp_path, name)), kind.parse(body)))
    jsonschema.validate(answer, preset.output)
    assert json.loads(json.dumps(answer)) == answer


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("roberta-sentiment-zh", {"texts": []}, "texts: a list of 1-64 strings."),
        ("bert-ner-zh", {"text": ""}, "text: a non-empty string of at most 2000 characters."),
        ("bert-ner-zh", {"text": "长" * 2001}, "at most 2000 characters"),
        ("pert-qa-zh", {"question": "谁？"}, "context: a non-empty string"),
        ("pert-qa-zh", {"question": 3, "context": "x"}, "question: a non-empty string"),
        ("keybert-keywords", {"text": "文本", "top_k": 0}, "top_k: an integer from 1 to 20."),
        ("keybert-keywords", {"text": "文本", "top_k": True}, "top_k"),
    ],
)
def test_bad_requests_are_refused_with_a_clear_message(
    name: str, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        kind_of(name, None).parse(body)


def test_a_repository_missing_from_the_mirror_names_the_fill_command(tmp_path: Path) -> None:
    kind = kind_of("bert-ner-zh", tmp_path / "empty-mirror")
    with pytest.raises(FileNotFoundError, match="aipool models mirror fill bert-ner-zh"):
        kind.load(version_1(tmp_path, "bert-ner-zh"))


@pytest.mark.parametrize("name", ["roberta-sentiment-zh", "bert-ner-zh", "pert-qa-zh"])
def test_fine_tune_writes_safetensors_that_load_and_predict(
    name: str, mirror: Path, tmp_path: Path
) -> None:
    kind = kind_of(name, mirror)
    cfg = runtime.train(kind, version_1(tmp_path, name), tmp_path / "out")
    model = tmp_path / "out" / "model"
    assert (model / "model.safetensors").is_file()
    assert not [f for f in model.iterdir() if f.suffix in (".bin", ".pt", ".pkl")]
    assert json.loads((tmp_path / "out" / "result.json").read_text())["config"] == cfg
    assert cfg["steps"] > 0
    assert math.isfinite(cfg["loss_last"])
    x, _ = kind.test_set()
    assert len(kind.predict(kind.load(model), x[:2])) == 2


def test_the_base_config_sets_the_fine_tune_and_training_learns(
    mirror: Path, tmp_path: Path
) -> None:
    base = version_1(tmp_path, "roberta-sentiment-zh")
    cfg = json.loads((base / "config.json").read_text()) | {"lr": 3e-3, "epochs": 30}
    (base / "config.json").write_text(json.dumps(cfg))
    kind = ZhSentiment(mirror)
    result = kind.train(base, tmp_path / "model")
    # 12 bundled training texts in batches of 8: two steps an epoch
    assert (result["lr"], result["epochs"], result["steps"]) == (3e-3, 30, 60)
    assert result["loss_last"] < result["loss_first"] - 0.05
    x, _, y, _ = kind._splits()
    predicted = [r["label"] for r in kind.predict(kind.load(tmp_path / "model"), x)]
    assert sum(p == t for p, t in zip(predicted, y, strict=True)) > len(y) / 2


def test_sentiment_fine_tunes_new_classes_from_a_dataset(mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "财经").mkdir(parents=True)
    (data / "财经" / "1.txt").write_text("股市今天大幅上涨。")
    rows = [
        {"text": "球队赢得了冠军。", "label": "体育"},
        {"text": "央行下调利率。", "label": "财经"},
    ]
    (data / "news.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    kind = ZhSentiment(mirror)
    assert kind.from_directory(data) == (
        ["球队赢得了冠军。", "央行下调利率。", "股市今天大幅上涨。"],
        ["体育", "财经", "财经"],
    )
    cfg = kind.train(version_1(tmp_path, "roberta-sentiment-zh"), tmp_path / "model", data)
    assert cfg["labels"] == ["体育", "财经"]
    [result] = kind.predict(kind.load(tmp_path / "model"), ["篮球比赛"])
    assert result["label"] in ("体育", "财经")


def test_ner_reads_jsonl_and_conll_and_reports_entities(mirror: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    row = {"tokens": list("王芳在上海"), "tags": ["B-PER", "I-PER", "O", "B-LOC", "I-LOC"]}
    (data / "a.jsonl").write_text(json.dumps(row, ensure_ascii=False))
    (data / "b.conll").write_text("张 B-PER\n伟 I-PER\n\n腾 B-ORG\n讯 I-ORG\n")
    x, y = ZhNer(mirror).from_directory(data)
    assert x == [list("王芳在上海"), ["张", "伟"], ["腾", "讯"]]
    assert y[1:] == [["B-PER", "I-PER"], ["B-ORG", "I-ORG"]]
    (data / "c.jsonl").write_text(json.dumps({"tokens": ["一"], "tags": []}))
    with pytest.raises(ValueError, match="1 tokens, 0 tags"):
        ZhNer(mirror).from_directory(data)
    kind = ZhNer(mirror)
    [result] = kind.predict(kind.load(version_1(tmp_path, "bert-ner-zh")), [list("李明在北京")])
    assert len(result["tags"]) == 5
    for entity in result["entities"]:  # spans of the text, as the tags say
        assert entity["word"] == "李明在北京"[entity["start"] : entity["end"]]
        assert result["tags"][entity["start"]] in (f"B-{entity['entity']}", f"I-{entity['entity']}")


def test_qa_answers_are_spans_of_the_context(mirror: Path, tmp_path: Path) -> None:
    kind = ZhQa(mirror)
    loaded = kind.load(version_1(tmp_path, "pert-qa-zh"))
    context = "长江全长约6300千米，是亚洲第一长河。" * 40  # longer than one window
    [result] = kind.predict(loaded, [{"question": "长江有多长？", "context": context}])
    assert result["answer"] == context[result["start"] : result["end"]]
    assert result["answer"]
    assert 0.0 < result["score"] <= 1.0


def test_qa_reads_squad_files(tmp_path: Path) -> None:
    squad = {
        "data": [
            {
                "paragraphs": [
                    {
                        "context": "黄山位于安徽省南部。",
                        "qas": [
                            {
                                "question": "黄山在哪？",
                                "answers": [{"text": "安徽省", "answer_start": 4}],
                            }
                        ],
                    }
                ]
            }
        ]
    }
    (tmp_path / "dev.json").write_text(json.dumps(squad, ensure_ascii=False))
    x, y = ZhQa(None).from_directory(tmp_path)
    assert x == [{"question": "黄山在哪？", "context": "黄山位于安徽省南部。"}]
    assert y == [["安徽省"]]


def test_keywords_come_from_the_text_and_training_copies_the_encoder(
    mirror: Path, tmp_path: Path
) -> None:
    kind = Keywords(mirror)
    text = "新能源汽车销量持续增长，电池技术和充电设施成为行业竞争的关键。"
    [result] = kind.predict(kind.load(version_1(tmp_path, "keybert-keywords")), [text])
    words = [k["keyword"] for k in result["keywords"]]
    assert 1 <= len(words) <= Keywords.K
    assert all(set(w) <= set(text) and " " not in w for w in words)
    cfg = kind.train(version_1(tmp_path, "keybert-keywords"), tmp_path / "model")
    assert cfg["fine_tuned"] is False
    assert (tmp_path / "model" / "modules.json").is_file()
    assert kind.weights(tmp_path / "model") == tmp_path / "model"


def test_a_mirror_holding_pytorch_model_bin_loads_the_same(mirror: Path, tmp_path: Path) -> None:
    """Three of the real repositories ship their weights as ``pytorch_model.bin`` (read with
    torch's weights-only loader): the same weights give the same answers."""
    import shutil

    import torch
    from safetensors.torch import load_file

    repo = str(presets()["roberta-sentiment-zh"].mirror)
    other = tmp_path / "mirror"
    shutil.copytree(mirror / repo, other / repo)
    weights = other / repo / "model.safetensors"
    torch.save(load_file(weights), other / repo / "pytorch_model.bin")
    weights.unlink()
    x, _ = ZhSentiment(mirror).test_set()
    v1 = version_1(tmp_path, "roberta-sentiment-zh")
    expected = ZhSentiment(mirror).predict(ZhSentiment(mirror).load(v1), x)
    assert ZhSentiment(other).predict(ZhSentiment(other).load(v1), x) == expected


@pytest.mark.parametrize(
    ("kind", "line", "message"),
    [
        (ZhSentiment, '{"text": "好"}', r"a.jsonl:2: an object with text, label expected"),
        (ZhNer, "not json", r"a.jsonl:2: not JSON"),
        (ZhQa, '{"question": "谁？"}', r"a.jsonl:2: an object with context, question, answers"),
        (Keywords, "[1, 2]", r"a.jsonl:2: an object with text, keywords expected"),
    ],
)
def test_a_bad_dataset_line_is_named_with_its_file_and_line(
    kind: type[Kind], line: str, message: str, tmp_path: Path
) -> None:
    good = {
        ZhSentiment: {"text": "好", "label": "positive"},
        ZhNer: {"tokens": ["好"], "tags": ["O"]},
        ZhQa: {"context": "好", "question": "？", "answers": ["好"]},
        Keywords: {"text": "好", "keywords": []},
    }[kind]
    (tmp_path / "a.jsonl").write_text(json.dumps(good) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        kind(None).from_directory(tmp_path)


def test_the_hub_s_class_names_are_the_preset_s_but_trained_ones_stay(
    mirror: Path, tmp_path: Path
) -> None:
    """The hub model's Negative / Positive read as the bundled labels, also when a job reads
    the mirror's directory as the model (the card's reproduce command); a fine-tune's own
    class names are kept as the data spells them."""
    kind = ZhSentiment(mirror)
    repo = mirror / ZhSentiment.repo
    assert kind.load(repo)[2] == kind.load(version_1(tmp_path, "roberta-sentiment-zh"))[2]
    assert kind.load(repo)[2] == ["negative", "positive"]
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": "好", "label": "Positive"}, {"text": "差", "label": "Negative"}]
    (data / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    kind.train(version_1(tmp_path, "roberta-sentiment-zh"), tmp_path / "model", data)
    assert kind.load(tmp_path / "model")[2] == ["Negative", "Positive"]
