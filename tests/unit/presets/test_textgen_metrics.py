"""The language generation metrics on fixed inputs, against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from portal.presets import metrics_textgen as metrics


def test_chinese_is_scored_on_characters_and_words_stay_whole() -> None:
    assert metrics.characters("今天 GPU 使用率90%，很高！Hello_x") == [
        *"今天", "gpu", *"使用率", "90", *"很高", "hello", "x",
    ]  # fmt: skip


def test_bleu_by_hand() -> None:
    # hyp "the cat is on the mat", ref "the cat sat on the mat" (6 words each: BP = 1)
    # 1-grams 5/6; 2-grams 3/5 (the cat, on the, the mat); 3-grams 1/4 (on the mat);
    # 4-grams 0/3, which sacrebleu's "exp" smoothing makes 1 / (2 * 3)
    # BLEU = (5/6 * 3/5 * 1/4 * 1/6) ** (1/4) = 0.379918 -> 37.9918
    got = metrics.bleu_chrf(["the cat is on the mat"], ["the cat sat on the mat"])
    assert got["bleu"] == pytest.approx(100 * (5 / 6 * 3 / 5 * 1 / 4 * 1 / 6) ** 0.25, abs=1e-3)
    # chrF: the same text everywhere is 100, no character in common is 0
    same = "the cat sat on the mat"
    assert metrics.bleu_chrf([same], [same]) == {"bleu": 100.0, "chrf": 100.0}
    assert metrics.bleu_chrf(["xyz"], ["abc"])["chrf"] == 0.0


def test_bleu_tokenizes_chinese_targets_by_character() -> None:
    # "今天天气好" vs "今天天气很好" with the zh tokenizer: 5 vs 6 characters
    # 1-grams 5/5; 2-grams 3/4 (今天 天天 天气); 3-grams 2/3 (今天天 天天气); 4-grams 1/2
    # BP = exp(1 - 6/5); BLEU = BP * (1 * 3/4 * 2/3 * 1/2) ** (1/4)
    got = metrics.bleu_chrf(["今天天气好"], ["今天天气很好"], target="zh")["bleu"]
    expected = 100 * math.exp(1 - 6 / 5) * (3 / 4 * 2 / 3 * 1 / 2) ** 0.25
    assert got == pytest.approx(expected, abs=1e-3)


def test_rouge_on_characters_by_hand() -> None:
    # hyp 今天天气好 (5 chars), ref 今天天气很好 (6 chars)
    # ROUGE-1: 5 in common, P = 5/5, R = 5/6, F = 2PR / (P + R) = 10/11
    # ROUGE-2: hyp bigrams 今天 天天 天气 气好, ref 今天 天天 天气 气很 很好: 3 in common,
    #          P = 3/4, R = 3/5, F = 2/3
    # ROUGE-L: the LCS is the whole hypothesis (5): as ROUGE-1, 10/11
    got = metrics.rouge(["今天天气好"], ["今天天气很好"])
    assert got == {
        "rouge1": pytest.approx(100 * 10 / 11, abs=1e-3),
        "rouge2": pytest.approx(100 * 2 / 3, abs=1e-3),
        "rougeL": pytest.approx(100 * 10 / 11, abs=1e-3),
    }


def test_rouge_averages_over_texts_and_scores_words_outside_chinese() -> None:
    # "the cat sat" vs "the cat sat down": R1 P = 1, R = 3/4, F = 6/7; R2 2/2 and 2/3, F = 4/5
    # with a second, identical pair (F = 1 everywhere) the means are (6/7 + 1) / 2 and 0.9
    got = metrics.rouge(["the cat sat", "a b"], ["the cat sat down", "a b"], chinese=False)
    assert got["rouge1"] == pytest.approx(100 * (6 / 7 + 1) / 2, abs=1e-3)
    assert got["rouge2"] == pytest.approx(100 * (4 / 5 + 1) / 2, abs=1e-3)


def test_perplexity_weights_texts_by_their_tokens() -> None:
    # two texts: summed losses 2.0 over 2 tokens and 1.0 over 1 token: exp(3 / 3) = e
    assert metrics.perplexity([2.0, 1.0], [2, 1]) == pytest.approx(math.e, abs=1e-4)
    # a loss of log(4) on every token is a perplexity of 4
    assert metrics.perplexity([3 * math.log(4)], [3]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="at least one"):
        metrics.perplexity([], [])
