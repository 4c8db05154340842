"""Tiny random-weight models of the Chinese understanding presets, built offline.

Each builder writes into ``<mirror>/<repo>`` a model of the real repository's architecture
(BERT with a sequence, token or span head; a BERT sentence encoder with mean pooling) from a
small config, with the tokenizer files the real repository has: a WordPiece ``vocab.txt`` of
the characters of the bundled examples for the Chinese BERTs, and a unigram tokenizer trained
on those examples for the multilingual encoder (a ``tokenizer.json``, as the real one ships).
Each is well under 2 MB and builds in about a second.
"""

from __future__ import annotations

import json
import shutil
import string
from collections.abc import Callable
from pathlib import Path

from portal.presets import understanding
from portal.presets.kinds import DATA

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
EXTRA = "，。？！、：；（）《》“”0123456789" + string.ascii_letters + ".-%"


def _corpus() -> list[str]:
    """Every text of the bundled examples, the tiny tokenizers' whole world."""
    texts: list[str] = []
    for name in ("zh_sentiment.jsonl", "zh_ner.jsonl", "zh_qa.jsonl", "zh_keywords.jsonl"):
        for line in (DATA / name).read_text().splitlines():
            row = json.loads(line)
            texts += [str(row.get(k, "")) for k in ("text", "context", "question")]
            texts.append("".join(row.get("tokens", [])))
    texts += ["今天心情很好", "这个产品很差"]
    return [t for t in texts if t]


def _bert(path: Path, head: str, labels: list[str] | None = None) -> None:
    import torch
    import transformers
    from transformers import BertConfig, BertTokenizer

    torch.manual_seed(0)  # the same tiny model every time
    path.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for text in _corpus() for c in text} | set(EXTRA))
    (path / "vocab.txt").write_text("\n".join(SPECIALS + chars) + "\n")
    tokenizer = BertTokenizer(vocab_file=str(path / "vocab.txt"), do_lower_case=False)
    extra: dict[str, object] = {}
    if labels:
        extra = {
            "id2label": dict(enumerate(labels)),
            "label2id": {label: i for i, label in enumerate(labels)},
        }
    config = BertConfig(
        vocab_size=len(SPECIALS) + len(chars),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        architectures=[head],
        **extra,
    )
    model = getattr(transformers, head)(config)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)


def sentiment(mirror: Path) -> None:
    _bert(
        mirror / understanding.ZhSentiment.repo,
        "BertForSequenceClassification",
        ["Negative", "Positive"],
    )


def ner(mirror: Path) -> None:
    # the real model's label order (its config.json)
    labels = ["I-ORG", "B-LOC", "O", "B-ORG", "I-LOC", "I-PER", "B-TIME", "I-TIME", "B-PER"]
    _bert(mirror / understanding.ZhNer.repo, "BertForTokenClassification", labels)


def qa(mirror: Path) -> None:
    from portal.presets import extraction

    _bert(mirror / extraction.ZhQa.repo, "BertForQuestionAnswering")


def keywords(mirror: Path) -> None:
    """A BERT encoder with XLM-R's kind of tokenizer (a sentencepiece unigram) and mean
    pooling, saved as sentence-transformers saves it: the real model's layout."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from tokenizers import SentencePieceUnigramTokenizer
    from transformers import BertConfig, BertModel, XLMRobertaTokenizer

    from portal.presets import extraction

    torch.manual_seed(0)
    path = mirror / extraction.Keywords.repo
    work = path.with_name(path.name + ".build")
    work.mkdir(parents=True, exist_ok=True)
    unigram = SentencePieceUnigramTokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    unigram.train_from_iterator(
        _corpus() * 3, vocab_size=1000, special_tokens=specials, unk_token="<unk>"
    )
    tokenizer = XLMRobertaTokenizer(tokenizer_object=unigram)
    config = BertConfig(
        vocab_size=unigram.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        architectures=["BertModel"],
    )
    BertModel(config).save_pretrained(work, safe_serialization=True)
    tokenizer.save_pretrained(work)
    encoder = Transformer(str(work), max_seq_length=128)
    pooling = Pooling(encoder.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[encoder, pooling], device="cpu").save(str(path))
    shutil.rmtree(work)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "roberta-sentiment-zh": sentiment,
    "bert-ner-zh": ner,
    "pert-qa-zh": qa,
    "keybert-keywords": keywords,
}
