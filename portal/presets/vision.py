"""Image-understanding presets on ``transformers``: what they share (weights from the offline
mirror, the device, images in requests, a few fine-tuning steps) and the two classifiers
(ViT on ImageNet, ViT on chest X-rays). Detection, segmentation and depth are in
:mod:`portal.presets.vision_dense`.

A version imported from the catalogue is a ``config.json`` naming its hub repository
(``base``): its weights are read from ``<mirror>/<base>``. A fine-tuned version holds its own
weights (``model.safetensors``, the image processor's JSON), written by ``save_pretrained``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from portal.presets.devices import device, hub_weights
from portal.presets.kinds import DATA, Kind
from translations import N_

SAMPLES = DATA / "vision"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
MAX_IMAGE_BYTES = 8 * 1024**2
MAX_PIXELS = 4096 * 4096
STEPS, BATCH, LR = 8, 4, 5e-5  # fine-tuning: a few steps, enough to adapt a head


@dataclass(frozen=True)
class Loaded:
    processor: Any
    model: Any
    device: str

    @property
    def id2label(self) -> dict[int, str]:
        return {int(k): str(v) for k, v in self.model.config.id2label.items()}

    def inputs(self, images: Sequence[Any], **extra: Any) -> dict[str, Any]:
        batch = self.processor(images=list(images), return_tensors="pt", **extra)
        return {k: v.to(self.device) if hasattr(v, "to") else v for k, v in batch.items()}


def read_image(path: Path) -> Any:
    from PIL import Image

    with Image.open(path) as img:
        return img.convert("RGB")


def decode_image(text: Any) -> Any:
    """A request's image: base64 PNG or JPEG (a ``data:`` URL prefix allowed), as RGB."""
    from PIL import Image, UnidentifiedImageError

    if not isinstance(text, str) or not text:
        raise ValueError(N_("image: a base64-encoded PNG or JPEG image."))
    if text.startswith("data:"):
        text = text.partition(",")[2]
    if len(text) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ValueError(N_("image: at most 8 MB."))
    try:
        raw = base64.b64decode(text, validate=True)
        img = Image.open(io.BytesIO(raw))
        if img.width * img.height > MAX_PIXELS:
            raise ValueError(N_("image: at most 4096 x 4096 pixels."))
        if img.format not in ("PNG", "JPEG"):
            raise ValueError(N_("image: a base64-encoded PNG or JPEG image."))
        return img.convert("RGB")
    except (binascii.Error, UnidentifiedImageError, Image.DecompressionBombError, OSError):
        raise ValueError(N_("image: a base64-encoded PNG or JPEG image.")) from None


def encode_png(array: np.ndarray) -> str:
    """An 8-bit (uint8) or 16-bit (uint16) grey array as a base64 PNG."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def image_folder(path: Path) -> tuple[list[Any], list[str]]:
    """``<label>/<image>`` files (png, jpg, bmp): the images and their labels."""
    files = [f for f in sorted(path.glob("*/*")) if f.suffix.lower() in IMAGE_SUFFIXES]
    if not files:
        raise ValueError(f"{path}: no <label>/<image> files (png, jpg, bmp)")
    return [read_image(f) for f in files], [f.parent.name for f in files]


def fine_tune(model: Any, batches: Sequence[dict[str, Any]], steps: int = STEPS) -> float:
    """A few AdamW steps over ``batches`` (cycled); the last loss."""
    import torch

    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR)
    model.train()
    loss = float("nan")
    for step in range(steps):
        out = model(**batches[step % len(batches)])
        out.loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        loss = float(out.loss.detach())
    model.eval()
    return loss


def chunks(items: Sequence[Any], size: int = BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class HubVision(Kind):
    """A ``transformers`` vision model from the mirror: ``auto`` names its Auto class."""

    preset: ClassVar[str]
    repo: ClassVar[str]
    auto: ClassVar[str]
    samples: ClassVar[str]  # the bundled samples' folder under data/vision
    labels: ClassVar[tuple[str, ...]] = ()

    def source(self, model: Path) -> Path:
        """Where the weights of the version in ``model`` are: its own (safetensors only), or
        the mirror's copy of the hub repository its ``config.json`` names."""
        if any(model.glob("*.safetensors")):
            return model
        cfg_file = model / "config.json"
        cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
        return hub_weights(self.mirror, str(cfg.get("base") or self.repo), self.preset)

    def load(self, model: Path, **options: Any) -> Loaded:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import transformers

        # typed in some releases, not in others: called through Any, so that neither needs an
        # ignore the other would call unused
        hf: Any = transformers
        hf.utils.logging.disable_progress_bar()
        src = self.source(model)
        if src == model:  # a version's own files: never a pickle (the mirror's are the site's)
            options = {**options, "use_safetensors": True}
        where = device()
        processor = hf.AutoImageProcessor.from_pretrained(src)
        auto = getattr(transformers, self.auto)
        net = auto.from_pretrained(src, **options).to(where).eval()
        return Loaded(processor, net, where)

    def save(self, loaded: Loaded, out: Path, **cfg: Any) -> dict[str, Any]:
        """The fine-tuned weights (safetensors) and processor in ``out``; what the job did."""
        loaded.model.to("cpu").save_pretrained(out)
        loaded.processor.save_pretrained(out)
        return {"preset": self.preset, **cfg}

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return [decode_image(body.get("image"))]

    def sample_dir(self, split: str = "") -> Path:
        return SAMPLES / self.samples / split if split else SAMPLES / self.samples


def no_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.inference_mode():
            return fn(*args, **kwargs)

    return wrapped


# ---------------------------------------------------------------------- classification
class ImageClassifier(HubVision):
    """Image classification (``<label>/<image>`` datasets): the top five labels of an image;
    fine-tuning puts a new head on the model when the dataset's labels differ from its own."""

    name = "vit_classifier"
    preset = "vit-base-classifier"
    repo = "google/vit-base-patch16-224"
    auto = "AutoModelForImageClassification"
    samples = "shapes"
    top = 5

    def test_set(self) -> tuple[list[Any], list[str]]:
        return image_folder(self.sample_dir("test"))

    def from_directory(self, path: Path) -> tuple[list[Any], list[str]]:
        """``<label>/<image>`` files: the folder's name is the image's label."""
        return image_folder(path)

    @no_grad
    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        import torch

        names = loaded.id2label
        results = []
        for batch in chunks(inputs):
            probs = torch.softmax(loaded.model(**loaded.inputs(batch)).logits, dim=-1).cpu()
            for row in probs:
                scores, ids = row.topk(min(self.top, row.numel()))
                top = [
                    {"label": names[int(i)], "score": round(float(s), 4)}
                    for s, i in zip(scores, ids, strict=True)
                ]
                results.append({"label": top[0]["label"], "top": top})
        return results

    def respond(self, results: list[dict[str, Any]]) -> Any:
        return results[0]["top"]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """ACC, macro F1 / P / R and the confusion matrix over the labels that occur (the
        model's other labels, a thousand for ImageNet, would only add empty rows)."""
        from portal.presets import metrics

        predicted = [r["label"] for r in self.predict(loaded, x)]
        labels = sorted(set(y) | set(predicted))
        report = metrics.classification(y, predicted, labels)
        metrics.confusion_png(report["confusion"], report["labels"], out / "confusion.png")
        return {"task": "classification", **report}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        x, y = self.from_directory(data) if data else image_folder(self.sample_dir("train"))
        names = sorted(set(y))
        probe = self.load(base)
        options: dict[str, Any] = {}
        if sorted(probe.id2label.values()) != names:
            options = {
                "num_labels": len(names),
                "id2label": dict(enumerate(names)),
                "label2id": {n: i for i, n in enumerate(names)},
                "ignore_mismatched_sizes": True,
            }
        loaded = self.load(base, **options) if options else probe
        label2id = {v: k for k, v in loaded.id2label.items()}
        import torch

        batches = [
            {
                **loaded.inputs(xs),
                "labels": torch.tensor([label2id[v] for v in ys], device=loaded.device),
            }
            for xs, ys in zip(chunks(x), chunks(y), strict=True)
        ]
        loss = fine_tune(loaded.model, batches)
        return self.save(loaded, out, trained_on=len(y), labels=names, steps=STEPS, loss=loss)


class XrayClassifier(ImageClassifier):
    """Chest X-rays, normal or pneumonia (a ViT fine-tuned on Kermany et al.'s paediatric
    chest X-rays)."""

    name = "xray_classifier"
    preset = "xray-pneumonia"
    repo = "nickmuchi/vit-finetuned-chest-xray-pneumonia"
    samples = "xray"


KINDS = {k.name: k for k in (ImageClassifier, XrayClassifier)}
