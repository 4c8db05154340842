"""Chinese text understanding on hub models: sentiment classification and named entities.

Both are BERT-architecture checkpoints (a Chinese RoBERTa-wwm sentiment classifier, a Chinese
BERT token classifier) loaded with transformers' Auto* classes from the offline mirror. A
fine-tune runs a few AdamW epochs on the dataset version (or on the bundled examples) and
writes safetensors with the tokenizer beside them, so a fine-tuned version is self-contained;
version 1 of an imported preset holds only ``{"preset", "base"}`` and runs the mirror's weights.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from portal.presets.devices import device, hub_weights
from portal.presets.kinds import DATA, SEED, Kind, _config, _split
from translations import N_

TEXT_2000 = N_("text: a non-empty string of at most 2000 characters.")
#: what a fine-tune does unless the base version's config.json says otherwise
TRAINING = {"epochs": 3, "lr": 5e-5, "batch_size": 8, "max_length": 256}


def jsonl(path: Path, *keys: str) -> list[dict[str, Any]]:
    """The JSON objects of a ``*.jsonl`` file, each with ``keys``; a clear error naming the
    file and line for one that is not."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path.name}:{number}: not JSON ({exc})") from None
        if not isinstance(row, dict) or not set(keys) <= set(row):
            raise ValueError(f"{path.name}:{number}: an object with {', '.join(keys)} expected")
        rows.append(row)
    return rows


def texts(body: dict[str, Any]) -> list[str]:
    value = body.get("texts")
    if not isinstance(value, list) or not 1 <= len(value) <= 64:
        raise ValueError(N_("texts: a list of 1-64 strings."))
    if not all(isinstance(t, str) and len(t) <= 2000 for t in value):
        raise ValueError(N_("texts: strings of at most 2000 characters."))
    return value


def text(body: dict[str, Any], name: str, limit: int, message: str) -> str:
    """A required string field of a request; ``message`` (marked with ``N_``) when it is not
    one, or is empty or longer than ``limit``."""
    value = body.get(name)
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ValueError(message)
    return value


class HubKind(Kind):
    """A preset whose weights are a hub repository in the offline mirror."""

    repo: ClassVar[str]
    preset: ClassVar[str]
    #: a file that only a version holding its own weights has
    own_weights: ClassVar[str] = "model.safetensors"

    def weights(self, model: Path) -> Path:
        """The directory to load: the version's own (fine-tuned) weights, else its base's in
        the mirror."""
        if (model / self.own_weights).is_file():
            return model
        return hub_weights(self.mirror, str(_config(model).get("base", self.repo)), self.preset)

    def settings(self, base: Path) -> dict[str, Any]:
        """The fine-tune's settings: the defaults, overridden by the base version's config."""
        raw = _config(base)
        repo = raw["base"] if isinstance(raw.get("base"), str) else self.repo
        return {"base": repo} | {k: raw.get(k, v) for k, v in TRAINING.items()}

    def auto(self, model: Path, head: Any, **kwargs: Any) -> tuple[Any, Any, Path]:
        """Tokenizer and model (in eval mode, on the job's device) of a version."""
        from transformers import AutoTokenizer

        path = self.weights(model)
        tokenizer = AutoTokenizer.from_pretrained(path)
        net = head.from_pretrained(path, **kwargs).to(device()).eval()
        return tokenizer, net, path

    @staticmethod
    def fit(net: Any, batches: list[dict[str, Any]], cfg: dict[str, Any]) -> dict[str, Any]:
        """A few AdamW epochs over the batches; the first and last epoch's mean loss."""
        import torch

        torch.manual_seed(SEED)
        optimiser = torch.optim.AdamW(net.parameters(), lr=float(cfg["lr"]))
        net.train()
        means = []
        for _ in range(int(cfg["epochs"])):
            losses = []
            for batch in batches:
                loss = net(**{k: v.to(net.device) for k, v in batch.items()}).loss
                loss.backward()
                optimiser.step()
                optimiser.zero_grad()
                losses.append(float(loss.detach()))
            means.append(sum(losses) / len(losses))
        net.eval()
        steps = int(cfg["epochs"]) * len(batches)
        return {"steps": steps, "loss_first": round(means[0], 6), "loss_last": round(means[-1], 6)}

    @staticmethod
    def save(net: Any, tokenizer: Any, out: Path) -> None:
        net.save_pretrained(out, safe_serialization=True)
        tokenizer.save_pretrained(out)


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


# ---------------------------------------------------------------------- text classification
class ZhSentiment(HubKind):
    """Chinese sentiment (positive / negative) with a sequence-classification head."""

    name = "zh_sentiment"
    preset = "roberta-sentiment-zh"
    repo = "IDEA-CCNL/Erlangshen-Roberta-110M-Sentiment"
    labels = ("negative", "positive")
    data = "zh_sentiment.jsonl"
    #: the hub model's class names, as this preset's labels
    ALIASES: ClassVar[dict[str, str]] = {
        "Negative": "negative",
        "Positive": "positive",
        "LABEL_0": "negative",
        "LABEL_1": "positive",
    }

    def _splits(self) -> tuple[list[str], list[str], list[str], list[str]]:
        rows = jsonl(DATA / self.data)
        x_train, x_test, y_train, y_test = _split(
            [r["text"] for r in rows], [r["label"] for r in rows], 0.5
        )
        return list(x_train), list(x_test), list(y_train), list(y_test)

    def test_set(self) -> tuple[list[Any], list[str]]:
        _, x, _, y = self._splits()
        return x, y

    def from_directory(self, path: Path) -> tuple[list[Any], list[str]]:
        """``*.jsonl`` lines ``{"text": …, "label": …}``, or ``<label>/<n>.txt`` files."""
        rows = [r for file in sorted(path.glob("*.jsonl")) for r in jsonl(file, "text", "label")]
        x = [str(r["text"]) for r in rows]
        y = [str(r["label"]) for r in rows]
        for file in sorted(path.glob("*/*.txt")):
            x.append(file.read_text().strip())
            y.append(file.parent.name)
        if not x:
            raise ValueError(f"{path}: no *.jsonl (text, label) or <label>/*.txt files")
        return x, y

    def load(self, model: Path) -> Any:
        from transformers import AutoModelForSequenceClassification

        tokenizer, net, _ = self.auto(model, AutoModelForSequenceClassification)
        names = [net.config.id2label[i] for i in range(net.config.num_labels)]
        if getattr(net.config, "preset", None) != self.preset:  # the hub's names, as ours
            names = [self.ALIASES.get(n, n) for n in names]
        return tokenizer, net, names

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        import torch

        tokenizer, net, names = loaded
        results = []
        for chunk in _chunks(list(inputs), 16):
            enc = tokenizer(
                list(chunk),
                truncation=True,
                max_length=int(net.config.max_position_embeddings),
                padding=True,
                return_tensors="pt",
            )
            with torch.no_grad():
                probs = net(**enc.to(net.device)).logits.softmax(-1).cpu()
            for row in probs:
                best = int(row.argmax())
                results.append({"label": names[best], "score": round(float(row[best]), 4)})
        return results

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return texts(body)

    def respond(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        return {"labels": [r["label"] for r in results], "scores": [r["score"] for r in results]}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        import torch

        cfg = self.settings(base)
        x, _, y, _ = self._splits()
        if data is not None:
            x, y = self.from_directory(data)
        tokenizer, net, names = self.load(base)
        classes = sorted(set(y))
        if not set(classes) <= set(names):  # new classes: a new head
            from transformers import AutoModelForSequenceClassification

            names = classes
            net = AutoModelForSequenceClassification.from_pretrained(
                self.weights(base), num_labels=len(names), ignore_mismatched_sizes=True
            ).to(device())
        net.config.id2label = dict(enumerate(names))
        net.config.label2id = {n: i for i, n in enumerate(names)}
        net.config.preset = self.preset  # its class names are the data's, used as they are
        batches = []
        for idx in _chunks(range(len(x)), int(cfg["batch_size"])):
            enc = tokenizer(
                [x[i] for i in idx],
                truncation=True,
                max_length=int(cfg["max_length"]),
                padding=True,
                return_tensors="pt",
            )
            enc["labels"] = torch.tensor([names.index(y[i]) for i in idx])
            batches.append(dict(enc))
        cfg |= self.fit(net, batches, cfg)
        self.save(net, tokenizer, out)
        return cfg | {"preset": self.preset, "trained_on": len(y), "labels": names}


# ---------------------------------------------------------------------- named entities
def _conll(path: Path) -> list[tuple[list[str], list[str]]]:
    """Two columns per line (token, BIO tag), a blank line between sentences."""
    sentences: list[tuple[list[str], list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    for line in [*path.read_text().splitlines(), ""]:
        parts = line.split()
        if len(parts) >= 2:
            tokens.append(parts[0])
            tags.append(parts[-1])
        elif tokens:
            sentences.append((tokens, tags))
            tokens, tags = [], []
    return sentences


class ZhNer(HubKind):
    """Chinese named entities (persons, places, organisations, times), one BIO tag per
    character, entities scored by seqeval."""

    name = "zh_ner"
    preset = "bert-ner-zh"
    repo = "shibing624/bert4ner-base-chinese"
    labels = ("LOC", "ORG", "PER", "TIME")
    data = "zh_ner.jsonl"

    def _rows(self) -> list[tuple[list[str], list[str]]]:
        return [(r["tokens"], r["tags"]) for r in jsonl(DATA / self.data)]

    def test_set(self) -> tuple[list[Any], list[Any]]:
        """Every third bundled sentence (the others are the bundled training set)."""
        rows = self._rows()[2::3]
        return [t for t, _ in rows], [g for _, g in rows]

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """``*.jsonl`` lines ``{"tokens": [...], "tags": [...]}`` (BIO), or ``*.conll`` files
        with a token and its tag on each line and a blank line between sentences."""
        rows = [
            (r["tokens"], r["tags"])
            for f in sorted(path.glob("*.jsonl"))
            for r in jsonl(f, "tokens", "tags")
        ]
        rows += [s for f in sorted(path.glob("*.conll")) for s in _conll(f)]
        for tokens, tags in rows:
            if len(tokens) != len(tags):
                raise ValueError(f"{path}: a sentence has {len(tokens)} tokens, {len(tags)} tags")
        if not rows:
            raise ValueError(f"{path}: no *.jsonl (tokens, tags) or *.conll files")
        return [list(map(str, t)) for t, _ in rows], [list(map(str, g)) for _, g in rows]

    def load(self, model: Path) -> Any:
        from transformers import AutoModelForTokenClassification

        tokenizer, net, _ = self.auto(model, AutoModelForTokenClassification)
        return tokenizer, net

    def _encode(self, tokenizer: Any, sentences: Sequence[list[str]], length: int) -> Any:
        return tokenizer(
            list(sentences),
            is_split_into_words=True,
            truncation=True,
            max_length=length,
            padding=True,
            return_tensors="pt",
        )

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        import torch
        from seqeval.metrics.sequence_labeling import get_entities

        tokenizer, net = loaded
        names = net.config.id2label
        results = []
        for chunk in _chunks(list(inputs), 8):
            enc = self._encode(tokenizer, chunk, int(net.config.max_position_embeddings))
            with torch.no_grad():
                best = net(**enc.to(net.device)).logits.argmax(-1).cpu()
            for row, tokens in enumerate(chunk):
                tags = ["O"] * len(tokens)
                seen: set[int] = set()
                for position, word in enumerate(enc.word_ids(row)):
                    if word is not None and word not in seen:  # a word's first piece
                        seen.add(word)
                        tags[word] = names[int(best[row, position])]
                entities = [
                    {"entity": kind, "word": "".join(tokens[s : e + 1]), "start": s, "end": e + 1}
                    for kind, s, e in get_entities(tags)
                ]
                results.append({"tags": tags, "entities": entities})
        return results

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return [list(text(body, "text", 2000, TEXT_2000))]

    def respond(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        return {"entities": results[0]["entities"]}

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        from portal.presets import metrics_understanding

        predicted = [r["tags"] for r in self.predict(loaded, x)]
        return {"task": "token-classification", **metrics_understanding.entities(y, predicted)}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        import torch

        cfg = self.settings(base)
        rows = [r for i, r in enumerate(self._rows()) if i % 3 != 2]
        x, y = [t for t, _ in rows], [g for _, g in rows]
        if data is not None:
            x, y = self.from_directory(data)
        tokenizer, net = self.load(base)
        names = [net.config.id2label[i] for i in range(net.config.num_labels)]
        wanted = {tag for tags in y for tag in tags}
        if not wanted <= set(names):  # tags the head does not have: a new head
            from transformers import AutoModelForTokenClassification

            names = sorted(wanted | {"O"})
            net = AutoModelForTokenClassification.from_pretrained(
                self.weights(base), num_labels=len(names), ignore_mismatched_sizes=True
            ).to(device())
            net.config.id2label = dict(enumerate(names))
            net.config.label2id = {n: i for i, n in enumerate(names)}
        batches = []
        for idx in _chunks(range(len(x)), int(cfg["batch_size"])):
            enc = self._encode(tokenizer, [x[i] for i in idx], int(cfg["max_length"]))
            labels = torch.full(enc["input_ids"].shape, -100)  # ignored: specials, later pieces
            for row, i in enumerate(idx):
                seen: set[int] = set()
                for position, word in enumerate(enc.word_ids(row)):
                    if word is not None and word not in seen:
                        seen.add(word)
                        labels[row, position] = names.index(y[i][word])
            enc["labels"] = labels
            batches.append(dict(enc))
        cfg |= self.fit(net, batches, cfg)
        self.save(net, tokenizer, out)
        return cfg | {"preset": self.preset, "trained_on": len(y), "labels": names}


KINDS: dict[str, type[Kind]] = {k.name: k for k in (ZhSentiment, ZhNer)}
