"""Metrics of the understanding presets: entity-level P / R / F1 (seqeval), extractive question
answering's exact match and F1 (the CMRC 2018 definition), and keywords' P / R / F1 at k.

Every report has the one shape of :meth:`portal.presets.kinds.Kind.evaluate`, values as
fractions (0-1) rounded to six places."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any


def _r(value: float) -> float:
    return round(float(value), 6)


# ---------------------------------------------------------------------- named entities
def entities(y_true: Sequence[list[str]], y_pred: Sequence[list[str]]) -> dict[str, Any]:
    """seqeval's CoNLL scoring of BIO tags: an entity counts when its type and both ends match.
    ``precision`` / ``recall`` / ``f1`` are micro-averaged over entities, ``accuracy`` is per
    tag; one row per entity type."""
    from seqeval.metrics import (
        accuracy_score,
        classification_report,
        f1_score,
        precision_score,
        recall_score,
    )

    true, pred = [list(t) for t in y_true], [list(p) for p in y_pred]
    table = classification_report(true, pred, output_dict=True, zero_division=0)
    kinds = sorted(k for k in table if not k.endswith(" avg"))
    return {
        "metrics": {
            "f1": _r(f1_score(true, pred, zero_division=0)),
            "precision": _r(precision_score(true, pred, zero_division=0)),
            "recall": _r(recall_score(true, pred, zero_division=0)),
            "accuracy": _r(accuracy_score(true, pred)),
            "samples": len(true),
        },
        "per_class": [
            {
                "label": kind,
                "precision": _r(table[kind]["precision"]),
                "recall": _r(table[kind]["recall"]),
                "f1": _r(table[kind]["f1-score"]),
                "support": int(table[kind]["support"]),
            }
            for kind in kinds
        ],
        "labels": [],
        "confusion": [],
    }


# ---------------------------------------------------------------------- question answering
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def qa_tokens(text: str) -> list[str]:
    """CMRC 2018's mixed segmentation: each CJK character a token, each run of ASCII letters
    and digits one (lower-cased) token; punctuation (Unicode's P* categories, Chinese and
    ASCII alike, as the script's list) and spaces dropped."""
    tokens: list[str] = []
    for piece in re.split(r"([A-Za-z0-9]+)", unicodedata.normalize("NFKC", text)):
        if _ASCII_WORD.fullmatch(piece):
            tokens.append(piece.lower())
            continue
        tokens += [
            ch for ch in piece if not ch.isspace() and not unicodedata.category(ch).startswith("P")
        ]
    return tokens


def qa_scores(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """(exact match, F1) of one answer against its references, the best over them. F1 is
    CMRC's: the longest common substring of the token lists over the prediction's and the
    reference's lengths."""
    pred = qa_tokens(prediction)
    em, f1 = 0.0, 0.0
    for answer in answers:
        gold = qa_tokens(answer)
        em = max(em, float(pred == gold))
        if not pred or not gold:
            continue
        match = SequenceMatcher(None, pred, gold, autojunk=False)
        common = match.find_longest_match(0, len(pred), 0, len(gold)).size
        if common:
            p, r = common / len(pred), common / len(gold)
            f1 = max(f1, 2 * p * r / (p + r))
    return em, f1


def qa(predictions: Sequence[str], answers: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Mean exact match and F1 over the questions."""
    scores = [qa_scores(p, a) for p, a in zip(predictions, answers, strict=True)]
    n = max(len(scores), 1)
    return {
        "metrics": {
            "exact_match": _r(sum(s[0] for s in scores) / n),
            "f1": _r(sum(s[1] for s in scores) / n),
            "samples": len(scores),
        },
        "per_class": [],
        "labels": [],
        "confusion": [],
    }


# ---------------------------------------------------------------------- keywords
def _norm(keyword: str) -> str:
    return "".join(unicodedata.normalize("NFKC", keyword).lower().split())


def keywords(
    predicted: Sequence[Sequence[str]], gold: Sequence[Sequence[str]], k: int
) -> dict[str, Any]:
    """Precision, recall and F1 at ``k``, per document then averaged over documents (macro):
    a keyword is a hit when it equals a gold one after NFKC, lower case and without spaces.
    Precision divides the hits by ``k``, recall by the number of gold keywords."""
    rows = []
    for pred, ref in zip(predicted, gold, strict=True):
        top = list(dict.fromkeys(_norm(p) for p in pred))[:k]
        want = {_norm(g) for g in ref}
        hits = len(set(top) & want)
        p, r = hits / k, hits / max(len(want), 1)
        rows.append((p, r, 2 * p * r / (p + r) if hits else 0.0))
    n = max(len(rows), 1)
    return {
        "metrics": {
            "precision": _r(sum(x[0] for x in rows) / n),
            "recall": _r(sum(x[1] for x in rows) / n),
            "f1": _r(sum(x[2] for x in rows) / n),
            "samples": len(rows),
        },
        "per_class": [],
        "labels": [],
        "confusion": [],
    }
