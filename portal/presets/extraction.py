"""Extraction from Chinese text on hub models: answer spans (extractive question answering) and
keywords.

Question answering is a BERT span head (a Chinese PERT model fine-tuned on Chinese reading
comprehension) read with transformers' Auto* classes: long contexts are cut into overlapping
windows and the best span of any window wins. Keywords are KeyBERT over a multilingual
sentence encoder: candidate words and word pairs come from jieba's segmentation (Chinese has no
spaces), ranked by their embedding's cosine similarity to the document's.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from portal.presets.devices import device
from portal.presets.kinds import DATA, Kind
from portal.presets.understanding import HubKind, jsonl, text
from translations import N_

QUESTION = N_("question: a non-empty string of at most 500 characters.")
CONTEXT = N_("context: a non-empty string of at most 5000 characters.")
TEXT = N_("text: a non-empty string of at most 10000 characters.")
TOP_K = N_("top_k: an integer from 1 to 20.")


# ---------------------------------------------------------------------- question answering
def _squad(path: Path) -> list[dict[str, Any]]:
    """The rows of a SQuAD / CMRC 2018 file (``data`` → ``paragraphs`` → ``qas``)."""
    rows = []
    for article in json.loads(path.read_text()).get("data", []):
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                answers = [
                    {"text": a["text"], "start": a.get("answer_start")}
                    for a in qa.get("answers", [])
                ]
                rows.append(
                    {
                        "context": paragraph["context"],
                        "question": qa["question"],
                        "answers": answers,
                    }
                )
    return rows


class ZhQa(HubKind):
    """Extractive question answering: the answer is a span of the given context."""

    name = "zh_qa"
    preset = "pert-qa-zh"
    repo = "hfl/chinese-pert-base-mrc"
    labels = ()
    data = "zh_qa.jsonl"
    #: the longest answer, in tokens, and the windows long contexts are cut into
    MAX_ANSWER = 64
    WINDOW, STRIDE = 384, 128

    @staticmethod
    def _xy(rows: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        x = [{"question": r["question"], "context": r["context"]} for r in rows]
        y = [[a["text"] if isinstance(a, dict) else str(a) for a in r["answers"]] for r in rows]
        return x, y

    def _rows(self) -> list[dict[str, Any]]:
        return jsonl(DATA / self.data)

    def test_set(self) -> tuple[list[Any], list[Any]]:
        """Every third bundled question (the others are the bundled training set)."""
        return self._xy(self._rows()[2::3])

    @staticmethod
    def _directory_rows(path: Path) -> list[dict[str, Any]]:
        keys = ("context", "question", "answers")
        rows = [row for file in sorted(path.glob("*.jsonl")) for row in jsonl(file, *keys)]
        rows += [row for file in sorted(path.glob("*.json")) for row in _squad(file)]
        if not rows:
            raise ValueError(f"{path}: no *.jsonl (context, question, answers) or SQuAD *.json")
        return rows

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """``*.jsonl`` lines ``{"context", "question", "answers": [{"text", "start"}]}``
        (``answers`` may be plain strings), or SQuAD / CMRC 2018 ``*.json`` files."""
        return self._xy(self._directory_rows(path))

    def load(self, model: Path) -> Any:
        from transformers import AutoModelForQuestionAnswering

        tokenizer, net, _ = self.auto(model, AutoModelForQuestionAnswering)
        return tokenizer, net

    def _answer(self, tokenizer: Any, net: Any, question: str, context: str) -> dict[str, Any]:
        import torch

        window = min(self.WINDOW, int(net.config.max_position_embeddings))
        enc = tokenizer(
            question,
            context,
            truncation="only_second",
            max_length=window,
            stride=min(self.STRIDE, window // 3),
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        enc.pop("overflow_to_sample_mapping", None)
        with torch.no_grad():
            out = net(**enc.to(net.device))
        starts = out.start_logits.log_softmax(-1).cpu()
        ends = out.end_logits.log_softmax(-1).cpu()
        best = (-math.inf, 0, 0, 0)
        for w in range(starts.shape[0]):
            span = [i for i, s in enumerate(enc.sequence_ids(w)) if s == 1]
            if not span:
                continue
            lo, hi = span[0], span[-1] + 1
            top = min(20, hi - lo)
            for s in (starts[w, lo:hi].topk(top).indices + lo).tolist():
                for e in (ends[w, lo:hi].topk(top).indices + lo).tolist():
                    score = float(starts[w, s] + ends[w, e])
                    if s <= e < s + self.MAX_ANSWER and score > best[0]:
                        best = (score, w, s, e)
        score, w, s, e = best
        if score == -math.inf:
            return {"answer": "", "score": 0.0, "start": 0, "end": 0}
        start, end = offsets[w][s][0], offsets[w][e][1]
        return {
            "answer": context[start:end],
            "score": round(math.exp(score), 4),
            "start": start,
            "end": end,
        }

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        tokenizer, net = loaded
        return [self._answer(tokenizer, net, i["question"], i["context"]) for i in inputs]

    def parse(self, body: dict[str, Any]) -> list[Any]:
        question = text(body, "question", 500, QUESTION)
        return [{"question": question, "context": text(body, "context", 5000, CONTEXT)}]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        from portal.presets import metrics_understanding

        predicted = [r["answer"] for r in self.predict(loaded, x)]
        return {"task": "question-answering", **metrics_understanding.qa(predicted, y)}

    def _features(self, tokenizer: Any, rows: list[dict[str, Any]], length: int) -> Any:
        """A training batch: each question's first window, with its answer's first and last
        token (the [CLS] token when the window does not hold the answer)."""
        import torch

        enc = tokenizer(
            [r["question"] for r in rows],
            [r["context"] for r in rows],
            truncation="only_second",
            max_length=length,
            padding=True,
            return_offsets_mapping=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        starts, ends = [], []
        for row, r in enumerate(rows):
            answer = r["answers"][0]
            first = answer.get("start")
            if first is None:
                first = r["context"].find(answer["text"])
            last = first + len(answer["text"])
            s = e = 0
            for i, seq in enumerate(enc.sequence_ids(row)):
                a, b = offsets[row][i]
                if seq == 1 and a <= first < b:
                    s = i
                if seq == 1 and a < last <= b:
                    e = i
            starts.append(s if s and e else 0)
            ends.append(e if s and e else 0)
        enc["start_positions"] = torch.tensor(starts)
        enc["end_positions"] = torch.tensor(ends)
        return dict(enc)

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        cfg = self.settings(base)
        rows = [r for i, r in enumerate(self._rows()) if i % 3 != 2]
        if data is not None:
            rows = [r for r in self._directory_rows(data) if r["answers"]]
        rows = [
            r | {"answers": [a if isinstance(a, dict) else {"text": a} for a in r["answers"]]}
            for r in rows
        ]
        tokenizer, net = self.load(base)
        size = int(cfg["batch_size"])
        length = min(max(int(cfg["max_length"]), 64), int(net.config.max_position_embeddings))
        batches = [
            self._features(tokenizer, rows[i : i + size], length) for i in range(0, len(rows), size)
        ]
        cfg |= self.fit(net, batches, cfg)
        self.save(net, tokenizer, out)
        return cfg | {"preset": self.preset, "trained_on": len(rows)}


# ---------------------------------------------------------------------- keywords
_CJK_GAP = re.compile(r"(?<=[\u3400-\u9fff])\s+(?=[\u3400-\u9fff])")


def _words(document: str) -> list[str]:
    """jieba's words of a text that can be keywords: two or more characters, a letter or
    digit among them (no punctuation, no single characters)."""
    import jieba

    jieba.setLogLevel(60)  # its dictionary loads quietly
    return [w for w in jieba.lcut(document) if len(w.strip()) >= 2 and any(c.isalnum() for c in w)]


class Keywords(HubKind):
    """KeyBERT keyword extraction; the encoder is not trained (a fine-tune copies it)."""

    name = "keywords"
    preset = "keybert-keywords"
    repo = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    own_weights = "modules.json"
    labels = ()
    data = "zh_keywords.jsonl"
    K = 5

    def test_set(self) -> tuple[list[Any], list[Any]]:
        rows = jsonl(DATA / self.data)
        return [r["text"] for r in rows], [r["keywords"] for r in rows]

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """``*.jsonl`` lines ``{"text": …, "keywords": [...]}``."""
        rows = [r for file in sorted(path.glob("*.jsonl")) for r in jsonl(file, "text", "keywords")]
        if not rows:
            raise ValueError(f"{path}: no *.jsonl (text, keywords) files")
        return [str(r["text"]) for r in rows], [list(map(str, r["keywords"])) for r in rows]

    def load(self, model: Path) -> Any:
        from keybert import KeyBERT
        from sentence_transformers import SentenceTransformer

        return KeyBERT(model=SentenceTransformer(str(self.weights(model)), device=device()))

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        from sklearn.feature_extraction.text import CountVectorizer

        results = []
        for item in inputs:
            document, k = (item, self.K) if isinstance(item, str) else (item["text"], item["k"])
            vectorizer = CountVectorizer(tokenizer=_words, token_pattern=None, ngram_range=(1, 2))
            try:
                found = loaded.extract_keywords(document, vectorizer=vectorizer, top_n=k)
            except ValueError:  # no candidate word at all
                found = []
            keywords = [
                {"keyword": _CJK_GAP.sub("", word), "score": round(float(score), 4)}
                for word, score in found
            ]
            results.append({"keywords": keywords})
        return results

    def parse(self, body: dict[str, Any]) -> list[Any]:
        k = body.get("top_k", self.K)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 20:
            raise ValueError(TOP_K)
        return [{"text": text(body, "text", 10000, TEXT), "k": k}]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        from portal.presets import metrics_understanding

        found = [[w["keyword"] for w in r["keywords"]] for r in self.predict(loaded, x)]
        report = metrics_understanding.keywords(found, y, self.K)
        return {"task": "keyword-extraction", **report}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        shutil.copytree(self.weights(base), out, dirs_exist_ok=True)
        return {
            "preset": self.preset,
            "base": self.settings(base)["base"],
            "fine_tuned": False,
            "note": "keyword extraction has no training step: the encoder is copied unchanged",
        }


KINDS: dict[str, type[Kind]] = {k.name: k for k in (ZhQa, Keywords)}
