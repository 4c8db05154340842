"""Metrics of the language generation presets, each from the library made for it: BLEU and
chrF (sacrebleu), ROUGE (rouge-score) and perplexity (the exponent of the models' mean token
loss, which torch computes in the programs)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

#: a CJK character (ideographs, kana, hangul, fullwidth forms) is a token of its own when a
#: Chinese summary is scored; other runs of letters and digits stay whole words
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+", re.UNICODE)


def characters(text: str) -> list[str]:
    """ROUGE tokens for Chinese: one per character; Latin words and numbers stay whole,
    lower-cased; punctuation is dropped."""
    return [t.lower() for t in _TOKEN.findall(text) if t.isalnum()]


class CharacterTokenizer:
    """rouge-score's tokenizer interface over :func:`characters`."""

    def tokenize(self, text: str) -> list[str]:
        return characters(text)


def bleu_chrf(
    hypotheses: Sequence[str], references: Sequence[str], target: str = "en"
) -> dict[str, float]:
    """Corpus BLEU and chrF (sacrebleu, one reference per sentence); BLEU tokenizes Chinese
    targets with sacrebleu's ``zh`` tokenizer, other targets with ``13a`` (WMT's)."""
    import sacrebleu

    tokenize = "zh" if target.startswith("zh") else "13a"
    refs = [list(references)]
    bleu = sacrebleu.corpus_bleu(list(hypotheses), refs, tokenize=tokenize)
    chrf = sacrebleu.corpus_chrf(list(hypotheses), refs)
    return {"bleu": round(float(bleu.score), 4), "chrf": round(float(chrf.score), 4)}


def rouge(
    hypotheses: Sequence[str], references: Sequence[str], chinese: bool = True
) -> dict[str, float]:
    """Mean ROUGE-1, ROUGE-2 and ROUGE-L F1 (rouge-score), in percent as the summarisation papers
    report them; Chinese text is scored on characters (:func:`characters`), other text with
    rouge-score's own word tokenizer."""
    from rouge_score import rouge_scorer

    kinds = ["rouge1", "rouge2", "rougeL"]
    scorer = rouge_scorer.RougeScorer(
        kinds, use_stemmer=False, tokenizer=CharacterTokenizer() if chinese else None
    )
    totals = dict.fromkeys(kinds, 0.0)
    for hyp, ref in zip(hypotheses, references, strict=True):
        scores = scorer.score(ref, hyp)
        for kind in kinds:
            totals[kind] += scores[kind].fmeasure
    n = max(len(hypotheses), 1)
    return {kind: round(100.0 * totals[kind] / n, 4) for kind in kinds}


def perplexity(nll: Sequence[float], tokens: Sequence[int]) -> float:
    """Token-weighted perplexity: ``exp(Σ negative log-likelihood / Σ predicted tokens)`` over
    the texts (each text's summed loss and the number of tokens it was taken over)."""
    count = sum(tokens)
    if count <= 0:
        raise ValueError("perplexity needs at least one predicted token")
    return round(math.exp(sum(nll) / count), 4)
