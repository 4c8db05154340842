"""The understanding presets' metrics on fixed inputs, against values worked out by hand."""

from __future__ import annotations

import pytest

from portal.presets import metrics_understanding as m


def test_entity_scores_are_seqeval_s_per_entity_counts() -> None:
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "O", "O"]]
    report = m.entities(true, pred)
    # gold entities: PER 0-1, LOC 3, ORG 0-1 (3); predicted: PER 0-1 (right), ORG 0-0 (wrong
    # end) (2). precision 1/2, recall 1/3, F1 2*(1/2)(1/3)/(1/2+1/3) = (1/3)/(5/6) = 0.4
    assert report["metrics"] == {
        "f1": 0.4,
        "precision": 0.5,
        "recall": 0.333333,
        # tags right: 3 of 4 in the first sentence, 2 of 3 in the second: 5/7
        "accuracy": 0.714286,
        "samples": 2,
    }
    rows = {r["label"]: r for r in report["per_class"]}
    assert list(rows) == ["LOC", "ORG", "PER"]
    assert rows["PER"] == {"label": "PER", "precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert rows["ORG"]["f1"] == rows["LOC"]["recall"] == 0.0
    assert (report["labels"], report["confusion"]) == ([], [])


def test_qa_tokens_are_cmrc_s_mixed_segmentation() -> None:
    # CJK characters one by one, an ASCII run as one lower-cased token, punctuation dropped
    assert m.qa_tokens("Slurm调度，GPU 2块！") == ["slurm", "调", "度", "gpu", "2", "块"]
    assert m.qa_tokens("《论语》") == ["论", "语"]


@pytest.mark.parametrize(
    ("prediction", "answers", "em", "f1"),
    [
        # longest common substring 2 (北京); P = 2/4, R = 2/2: F1 = 2(0.5)(1)/1.5 = 2/3
        ("北京大学", ["北京"], 0.0, 2 / 3),
        ("论语", ["《论语》"], 1.0, 1.0),  # punctuation does not count
        # the best of two references: 长江 in 长江流域 (2 of 4, 2 of 2) beats 黄河 (0)
        ("长江流域", ["黄河", "长江"], 0.0, 2 / 3),
        ("", ["答案"], 0.0, 0.0),
    ],
)
def test_qa_exact_match_and_f1(prediction: str, answers: list[str], em: float, f1: float) -> None:
    assert m.qa_scores(prediction, answers) == (em, pytest.approx(f1))


def test_qa_report_is_the_mean_over_questions() -> None:
    report = m.qa(["北京大学", "论语", ""], [["北京"], ["《论语》"], ["答案"]])
    # EM (0 + 1 + 0) / 3; F1 (2/3 + 1 + 0) / 3 = 5/9
    assert report["metrics"] == {"exact_match": 0.333333, "f1": 0.555556, "samples": 3}
    assert report["per_class"] == report["labels"] == report["confusion"] == []


def test_keywords_at_k_per_document_then_averaged() -> None:
    predicted = [["深度 学习", "模型", "数据", "医疗"], ["A", "a", "B"]]
    gold = [["深度学习", "数据", "医疗", "影像"], ["c"]]
    report = m.keywords(predicted, gold, 3)
    # document 1, top 3 = 深度学习 (spaces do not count), 模型, 数据: 2 hits;
    # P = 2/3, R = 2/4, F1 = 2(2/3)(1/2)/(2/3 + 1/2) = 4/7
    # document 2: "A" and "a" are one keyword; no hit: 0, 0, 0
    # means: P = (2/3)/2 = 1/3, R = (1/2)/2 = 1/4, F1 = (4/7)/2 = 2/7
    assert report["metrics"] == {
        "precision": 0.333333,
        "recall": 0.25,
        "f1": 0.285714,
        "samples": 2,
    }
