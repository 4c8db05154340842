"""Language generation presets on hub weights: Chinese to English translation (MarianMT) and
multilingual summarisation (mT5); :mod:`portal.presets.textgen_lm` has the chat and text
generation programs, and ``KINDS`` here gathers all four."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from portal.presets import metrics_textgen as metrics
from portal.presets import textgen_lm
from portal.presets.kinds import Kind
from portal.presets.textgen_hub import (
    EVAL_TOKENS,
    HubKind,
    read_jsonl,
    samples,
    text_field,
    token_limit,
    tokens_asked,
)
from translations import N_


class _Seq2Seq(HubKind):
    """Text in, text out (an encoder-decoder): fine-tuned on (source, target) pairs."""

    auto = "AutoModelForSeq2SeqLM"
    source: ClassVar[str]
    target: ClassVar[str]
    section: ClassVar[str]
    reply: ClassVar[str]

    def split(self, name: str) -> tuple[list[Any], list[Any]]:
        rows = samples()[self.section][name]
        return [r[self.source] for r in rows], [r[self.target] for r in rows]

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        rows = read_jsonl(path, (self.source, self.target))
        return [str(r[self.source]) for r in rows], [str(r[self.target]) for r in rows]

    def batches(self, loaded: Any, x: Sequence[Any], y: Sequence[Any]) -> list[dict[str, Any]]:
        tokenizer, _ = loaded
        out = []
        for i in range(0, len(x), 4):
            batch = tokenizer(
                [self.prepare(t) for t in x[i : i + 4]],
                text_target=list(y[i : i + 4]),
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            )
            batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
            out.append(dict(batch))
        return out

    def prepare(self, text: str) -> str:
        """The text as the model was trained to read it."""
        return text

    def generate(self, loaded: Any, texts: Sequence[str], max_new_tokens: int) -> list[str]:
        import torch

        tokenizer, net = loaded
        out: list[str] = []
        for i in range(0, len(texts), 8):
            batch = tokenizer(
                [self.prepare(t) for t in texts[i : i + 8]],
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            ).to(net.device)
            with torch.inference_mode():
                ids = net.generate(**batch, max_new_tokens=token_limit(net, max_new_tokens))
            out += tokenizer.batch_decode(ids, skip_special_tokens=True)
        return [t.strip() for t in out]

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        texts = [i["text"] if isinstance(i, dict) else str(i) for i in inputs]
        asked = [i["max_new_tokens"] for i in inputs if isinstance(i, dict)]
        limit = max(asked, default=EVAL_TOKENS)
        return [{self.reply: t} for t in self.generate(loaded, texts, limit)]

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return [
            {
                "text": text_field(body, "text", N_("text: a text of 1 to 10000 characters.")),
                "max_new_tokens": tokens_asked(body, EVAL_TOKENS),
            }
        ]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        hypotheses = self.generate(loaded, list(x), EVAL_TOKENS)
        scores = self.score(hypotheses, list(y))
        return {
            "task": self.task,
            "metrics": {**scores, "samples": len(y)},
            "per_class": [],
            "labels": [],
            "confusion": [],
        }

    def score(self, hypotheses: list[str], references: list[str]) -> dict[str, float]:
        raise NotImplementedError


class OpusMTTranslation(_Seq2Seq):
    """Chinese to English with MarianMT; BLEU and chrF (sacrebleu, 13a tokenizer: the
    references are English). A dataset version holds ``*.jsonl`` lines
    ``{"source": <Chinese>, "target": <English>}``."""

    name = "opus_mt_translation"
    preset = "opus-mt-zh-en"
    repo = "Helsinki-NLP/opus-mt-zh-en"
    task = "translation"
    section = "translation"
    source, target, reply = "source", "target", "translation"

    def score(self, hypotheses: list[str], references: list[str]) -> dict[str, float]:
        return metrics.bleu_chrf(hypotheses, references, target="en")


class MT5Summariser(_Seq2Seq):
    """Abstractive summaries with mT5 fine-tuned on XL-Sum (45 languages, Chinese among them);
    ROUGE-1/2/L F1 scored on characters (Chinese). A dataset version holds ``*.jsonl`` lines
    ``{"text": <article>, "summary": <summary>}``."""

    name = "mt5_summariser"
    preset = "mt5-summariser"
    repo = "csebuetnlp/mT5_multilingual_XLSum"
    task = "summarization"
    section = "summarisation"
    source, target, reply = "text", "summary", "summary"

    def prepare(self, text: str) -> str:
        # XL-Sum's articles were read with newlines and runs of blanks made single spaces
        return " ".join(text.split())

    def score(self, hypotheses: list[str], references: list[str]) -> dict[str, float]:
        return metrics.rouge(hypotheses, references, chinese=True)


_ALL: tuple[type[Kind], ...] = (OpusMTTranslation, MT5Summariser, *textgen_lm.KINDS)
KINDS: dict[str, type[Kind]] = {k.name: k for k in _ALL}
