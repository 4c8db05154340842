"""The programs behind the runnable presets: fine-tune, evaluate, predict.

Each kind reads and writes plain files (``config.json`` and ``*.npz`` arrays, never pickles),
so a model version is loaded without running code from its artifacts. Hub weights (the MiniLM
encoder) come from the offline mirror directory; nothing is downloaded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import yaml

from translations import N_

DATA = Path(__file__).with_name("data")
SEED = 0


def _split(x: Any, y: Any, test: float) -> tuple[Any, Any, Any, Any]:
    from sklearn.model_selection import train_test_split

    return train_test_split(x, y, test_size=test, random_state=SEED, stratify=y)  # type: ignore[no-any-return]


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)  # type: ignore[no-any-return]


def _config(model: Path) -> dict[str, Any]:
    path = model / "config.json"
    return json.loads(path.read_text()) if path.is_file() else {}


class Kind:
    name: ClassVar[str]
    labels: ClassVar[tuple[str, ...]]

    def __init__(self, mirror: Path | None = None) -> None:
        self.mirror = mirror

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def test_set(self) -> tuple[list[Any], list[str]]:
        raise NotImplementedError

    def from_directory(self, path: Path) -> tuple[list[Any], list[str]]:
        """Labelled examples of a dataset version (layout per kind)."""
        raise NotImplementedError

    def load(self, model: Path) -> Any:
        raise NotImplementedError

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def parse(self, body: dict[str, Any]) -> list[Any]:
        raise NotImplementedError

    def respond(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        return results[0]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """The evaluation report of ``loaded`` on the labelled examples ``x``, ``y``.

        Every task's report has one shape (docs/models.md, "Evaluation reports"): ``task``;
        ``metrics``, a flat ``{name: number}`` with ``samples``; ``per_class``, rows of
        ``{"label": ..., <column>: number}`` (may be empty); and, for classification only,
        ``labels`` and ``confusion``. Files beside ``metrics.json`` (a plot) go in ``out``.
        This default is classification's: ACC, macro F1 / P / R and the confusion matrix."""
        from portal.presets import metrics

        predicted = [r["label"] for r in self.predict(loaded, x)]
        labels = [*self.labels, *sorted(set(y) - set(self.labels))]
        report = metrics.classification(y, predicted, labels)
        metrics.confusion_png(report["confusion"], report["labels"], out / "confusion.png")
        return {"task": "classification", **report}


# ---------------------------------------------------------------------- image: bundled digits
@cache
def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x_train, x_test, y_train, y_test = _split(d.data, d.target.astype(str), 0.25)
    return x_train, x_test, y_train, y_test


IMAGES = (".png", ".jpg", ".jpeg", ".pgm", ".bmp")


def _image_folder(path: Path) -> tuple[list[Any], list[str]]:
    """``<label>/<image>`` files as 8x8 grey images on the digits' 0-16 scale."""
    from PIL import Image

    x: list[Any] = []
    y: list[str] = []
    for file in sorted(path.glob("*/*")):
        if file.suffix.lower() in IMAGES:
            with Image.open(file) as img:
                grey = img.convert("L").resize((8, 8))
            x.append(np.asarray(grey, dtype=float).reshape(64) * 16.0 / 255.0)
            y.append(file.parent.name)
    if not x:
        raise ValueError(f"{path}: no <label>/<image> files (png, jpg, pgm, bmp)")
    return x, y


def _pixels(body: dict[str, Any]) -> list[np.ndarray]:
    pixels = body.get("pixels")
    if not isinstance(pixels, list) or len(pixels) != 64:
        raise ValueError(N_("pixels: 64 numbers (an 8x8 image, 0-16)."))
    if not all(isinstance(v, (int, float)) and 0 <= v <= 16 for v in pixels):
        raise ValueError(N_("pixels: numbers between 0 and 16."))
    return [np.asarray(pixels, dtype=float)]


class _DigitsKind(Kind):
    """The bundled 8x8 digits: train on them (or on a dataset's image folder), test on their
    held-out quarter; requests send 64 pixels."""

    labels = tuple(str(i) for i in range(10))

    @staticmethod
    def _train_set(data: Path | None) -> tuple[np.ndarray, np.ndarray]:
        if data is None:
            x, _, y, _ = _digits()
            return x, y
        x_list, y_list = _image_folder(data)
        return np.asarray(x_list), np.asarray(y_list)

    def test_set(self) -> tuple[list[Any], list[str]]:
        _, x, _, y = _digits()
        return list(x), list(y)

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return _pixels(body)

    def from_directory(self, path: Path) -> tuple[list[Any], list[str]]:
        return _image_folder(path)


class DigitsClassifier(_DigitsKind):
    name = "digits_classifier"

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        from sklearn.linear_model import LogisticRegression

        cfg = {"C": 1.0, "max_iter": 2000, **_config(base)}
        x, y = self._train_set(data)
        clf = LogisticRegression(C=float(cfg["C"]), max_iter=int(cfg["max_iter"]))
        clf.fit(x / 16.0, y)
        np.savez(
            out / "weights.npz", coef=clf.coef_, intercept=clf.intercept_, classes=clf.classes_
        )
        cfg.update(preset="digits-classifier", trained_on=len(y))
        (out / "config.json").write_text(json.dumps(cfg, indent=2))
        return cfg

    def load(self, model: Path) -> Any:
        with np.load(model / "weights.npz", allow_pickle=False) as w:
            return w["coef"], w["intercept"], w["classes"]

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        coef, intercept, classes = loaded
        probs = _softmax(np.asarray(inputs) / 16.0 @ coef.T + intercept)
        return [
            {
                "label": str(classes[row.argmax()]),
                "probabilities": {
                    str(c): round(float(p), 4) for c, p in zip(classes, row, strict=True)
                },
            }
            for row in probs
        ]


class DigitsRetrieval(_DigitsKind):
    name = "digits_retrieval"

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        from sklearn.decomposition import PCA

        cfg = {"components": 16, **_config(base)}
        x, y = self._train_set(data)
        pca = PCA(n_components=int(cfg["components"]), random_state=SEED).fit(x)
        gallery = pca.transform(x)
        gallery /= np.linalg.norm(gallery, axis=1, keepdims=True)
        np.savez(
            out / "index.npz",
            mean=pca.mean_,
            components=pca.components_,
            gallery=gallery,
            labels=np.asarray(y),
        )
        cfg.update(preset="digits-retrieval", gallery=len(y))
        (out / "config.json").write_text(json.dumps(cfg, indent=2))
        return cfg

    def load(self, model: Path) -> Any:
        with np.load(model / "index.npz", allow_pickle=False) as w:
            return {k: w[k] for k in w.files}

    def predict(self, loaded: Any, inputs: Sequence[Any], k: int = 5) -> list[dict[str, Any]]:
        emb = (np.asarray(inputs) - loaded["mean"]) @ loaded["components"].T
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        scores = emb @ loaded["gallery"].T
        results = []
        for row in scores:
            top = np.argsort(-row)[:k]
            results.append(
                {
                    "label": str(loaded["labels"][top[0]]),
                    "neighbours": [
                        {
                            "index": int(i),
                            "label": str(loaded["labels"][i]),
                            "score": round(float(row[i]), 4),
                        }
                        for i in top
                    ],
                }
            )
        return results


# ---------------------------------------------------------------------- language: MiniLM
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@cache
def _encoder(path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    # a card only when Slurm gave the job one (it sets CUDA_VISIBLE_DEVICES for gpu and shard)
    granted = bool(os.environ.get("CUDA_VISIBLE_DEVICES"))
    device = "cuda" if granted and torch.cuda.is_available() else "cpu"
    return SentenceTransformer(path, device=device)


class _MiniLMHead(Kind):
    data: ClassVar[str]
    preset: ClassVar[str]

    def encoder_path(self, cfg: dict[str, Any]) -> str:
        repo = str(cfg.get("base", MINILM))
        if self.mirror is None:
            raise FileNotFoundError("the offline mirror directory is not set (--mirror)")
        path = self.mirror / repo
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"{repo} is not in the offline mirror {self.mirror}; fill it from a hub first"
            )
        return str(path)

    def encode(self, cfg: dict[str, Any], texts: Sequence[str]) -> np.ndarray:
        model = _encoder(self.encoder_path(cfg))
        return np.asarray(model.encode(list(texts), normalize_embeddings=True, batch_size=32))

    @classmethod
    def _examples(cls) -> tuple[list[str], list[str]]:
        raw = yaml.safe_load((DATA / cls.data).read_text())
        texts = [t for label in cls.labels for t in raw[label]]
        ys = [label for label in cls.labels for _ in raw[label]]
        return texts, ys

    @classmethod
    def _splits(cls) -> tuple[list[str], list[str], list[str], list[str]]:
        texts, ys = cls._examples()
        x_train, x_test, y_train, y_test = _split(texts, ys, 0.5)
        return list(x_train), list(x_test), list(y_train), list(y_test)

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        from sklearn.linear_model import LogisticRegression

        cfg = {"base": MINILM, "C": 10.0, **_config(base)}
        x, _, y, _ = self._splits()
        if data is not None:
            x, y = self.from_directory(data)
        clf = LogisticRegression(C=float(cfg["C"]), max_iter=2000).fit(self.encode(cfg, x), y)
        np.savez(out / "head.npz", coef=clf.coef_, intercept=clf.intercept_, classes=clf.classes_)
        cfg.update(preset=self.preset, trained_on=len(y))
        (out / "config.json").write_text(json.dumps(cfg, indent=2))
        return cfg

    def test_set(self) -> tuple[list[Any], list[str]]:
        _, x, _, y = self._splits()
        return x, y

    def load(self, model: Path) -> Any:
        cfg = _config(model)
        with np.load(model / "head.npz", allow_pickle=False) as w:
            head = (w["coef"], w["intercept"], w["classes"])
        self.encoder_path(cfg)
        return cfg, head

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        cfg, (coef, intercept, classes) = loaded
        z = self.encode(cfg, inputs) @ coef.T + intercept
        if z.shape[1] == 1:  # binary: one logit for classes[1]
            z = np.hstack([-z, z])
        probs = _softmax(z)
        return [
            {"label": str(classes[row.argmax()]), "score": round(float(row.max()), 4)}
            for row in probs
        ]

    def parse(self, body: dict[str, Any]) -> list[Any]:
        texts = body.get("texts")
        if not isinstance(texts, list) or not 1 <= len(texts) <= 64:
            raise ValueError(N_("texts: a list of 1-64 strings."))
        if not all(isinstance(t, str) and len(t) <= 2000 for t in texts):
            raise ValueError(N_("texts: strings of at most 2000 characters."))
        return texts

    def from_directory(self, path: Path) -> tuple[list[Any], list[str]]:
        """``*.jsonl`` lines ``{"text": …, "label": …}``, or ``<label>/<n>.txt`` files."""
        texts: list[str] = []
        labels: list[str] = []
        for file in sorted(path.glob("*.jsonl")):
            for line in file.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    texts.append(str(row["text"]))
                    labels.append(str(row["label"]))
        for file in sorted(path.glob("*/*.txt")):
            texts.append(file.read_text().strip())
            labels.append(file.parent.name)
        if not texts:
            raise ValueError(f"{path}: no *.jsonl (text, label) or <label>/*.txt files")
        return texts, labels

    def respond(self, results: list[dict[str, Any]]) -> dict[str, Any]:
        return {"labels": [r["label"] for r in results], "scores": [r["score"] for r in results]}


class MiniLMSentiment(_MiniLMHead):
    name = "minilm_sentiment"
    preset = "minilm-sentiment"
    data = "sentiment.yaml"
    labels = ("negative", "positive")


class MiniLMIntent(_MiniLMHead):
    name = "minilm_intent"
    preset = "minilm-intent"
    data = "intents.yaml"
    labels = ("account", "billing", "gpu", "storage")


KINDS: dict[str, type[Kind]] = {
    k.name: k for k in (DigitsClassifier, DigitsRetrieval, MiniLMSentiment, MiniLMIntent)
}
