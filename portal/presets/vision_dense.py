"""Dense and box predictions on ``transformers``: DETR object detection, SegFormer semantic
segmentation and DPT monocular depth (the shared parts are in :mod:`portal.presets.vision`).
Each reads a dataset version in the layout its ``from_directory`` documents; the bundled
samples (``data/vision``) are in the same layout."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from portal.presets import metrics_vision
from portal.presets.vision import (
    IMAGE_SUFFIXES,
    STEPS,
    HubVision,
    Loaded,
    chunks,
    encode_png,
    fine_tune,
    no_grad,
    read_image,
)

EMPTY: dict[str, list[Any]] = {"labels": [], "confusion": []}
BOX = ("xmin", "ymin", "xmax", "ymax")  # the report's classification-only fields


def _images(folder: Path) -> list[Path]:
    files = [f for f in sorted(folder.glob("*")) if f.suffix.lower() in IMAGE_SUFFIXES]
    if not files:
        raise ValueError(f"{folder}: no images (png, jpg, bmp)")
    return files


def _relabel(names: list[str]) -> dict[str, Any]:
    """``from_pretrained`` options that give the model a new head for ``names``."""
    return {
        "num_labels": len(names),
        "id2label": dict(enumerate(names)),
        "label2id": {n: i for i, n in enumerate(names)},
        "ignore_mismatched_sizes": True,
    }


# ---------------------------------------------------------------------- detection
class Detector(HubVision):
    """Object detection: boxes with labels and scores. A dataset is COCO-style:
    ``annotations.json`` (images, annotations with ``bbox`` = [x, y, width, height] in pixels,
    categories) and the images under ``images/``."""

    name = "detr_detector"
    preset = "detr-detector"
    repo = "facebook/detr-resnet-50"
    auto = "AutoModelForObjectDetection"
    samples = "detection"
    threshold = 0.5  # served answers; evaluation ranks every box (COCO's 100 per image)

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        coco = json.loads((path / "annotations.json").read_text())
        x, y = [], []
        for image in coco["images"]:
            x.append(read_image(path / "images" / image["file_name"]))
            anns = [a for a in coco["annotations"] if a["image_id"] == image["id"]]
            y.append({"image": image, "annotations": anns, "categories": coco["categories"]})
        return x, y

    def test_set(self) -> tuple[list[Any], list[Any]]:
        return self.from_directory(self.sample_dir())

    @no_grad
    def detect(self, loaded: Loaded, images: Sequence[Any], threshold: float) -> list[Any]:
        found = []
        for batch in chunks(images):
            out = loaded.model(**loaded.inputs(batch))
            sizes = [(img.height, img.width) for img in batch]
            found += loaded.processor.post_process_object_detection(
                out, threshold=threshold, target_sizes=sizes
            )
        names = loaded.id2label
        return [
            [
                {
                    "label": names[int(label)],
                    "score": round(float(score), 4),
                    "box": dict(zip(BOX, (round(float(v), 2) for v in box), strict=True)),
                }
                for score, label, box in zip(r["scores"], r["labels"], r["boxes"], strict=True)
            ]
            for r in found
        ]

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"objects": objs} for objs in self.detect(loaded, inputs, self.threshold)]

    def respond(self, results: list[dict[str, Any]]) -> Any:
        return results[0]["objects"]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """COCO box mAP (pycocotools) with each category's AP; a predicted label is matched to
        the dataset's category of the same name."""
        categories = y[0]["categories"] if y else []
        ids = {c["name"]: c["id"] for c in categories}
        coco = {
            "images": [item["image"] for item in y],
            "annotations": [a for item in y for a in item["annotations"]],
            "categories": categories,
        }
        detections = [
            {
                "image_id": item["image"]["id"],
                "category_id": ids[o["label"]],
                "bbox": [
                    o["box"]["xmin"],
                    o["box"]["ymin"],
                    o["box"]["xmax"] - o["box"]["xmin"],
                    o["box"]["ymax"] - o["box"]["ymin"],
                ],
                "score": o["score"],
            }
            for item, objs in zip(y, self.detect(loaded, x, 0.0), strict=True)
            for o in objs
            if o["label"] in ids
        ]
        return {"task": "object-detection", **metrics_vision.detection(coco, detections), **EMPTY}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        x, y = self.from_directory(data or self.sample_dir())
        names = [c["name"] for c in y[0]["categories"]]
        probe = self.load(base)
        same = set(names) <= set(probe.id2label.values())
        loaded = probe if same else self.load(base, **_relabel(names))
        label2id = {v: k for k, v in loaded.id2label.items()}
        by_id = {c["id"]: label2id[c["name"]] for c in y[0]["categories"]}
        targets = [
            {
                "image_id": item["image"]["id"],
                "annotations": [
                    {**a, "category_id": by_id[a["category_id"]]} for a in item["annotations"]
                ],
            }
            for item in y
        ]
        batches = []
        for xs, ts in zip(chunks(x), chunks(targets), strict=True):
            batch = loaded.inputs(xs, annotations=list(ts))
            batch["labels"] = [
                {k: v.to(loaded.device) for k, v in t.items()} for t in batch["labels"]
            ]
            batches.append(batch)
        loss = fine_tune(loaded.model, batches)
        return self.save(loaded, out, trained_on=len(x), labels=names, steps=STEPS, loss=loss)


# ---------------------------------------------------------------------- segmentation
class Segmenter(HubVision):
    """Semantic segmentation: a mask per class found. A dataset has ``images/<name>`` and
    ``masks/<stem>.png`` (grey: each pixel the class id in the model's labels, 255 where not
    labelled); an optional ``labels.json`` ``{id: name}`` gives fine-tuning a new set of
    classes."""

    name = "segformer_segmenter"
    preset = "segformer-segmenter"
    repo = "nvidia/segformer-b0-finetuned-ade-512-512"
    auto = "AutoModelForSemanticSegmentation"
    samples = "segmentation"

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        from PIL import Image

        x, y = [], []
        for file in _images(path / "images"):
            x.append(read_image(file))
            with Image.open(path / "masks" / f"{file.stem}.png") as mask:
                y.append(np.asarray(mask.convert("L")))
        return x, y

    def test_set(self) -> tuple[list[Any], list[Any]]:
        return self.from_directory(self.sample_dir())

    @no_grad
    def segment(self, loaded: Loaded, images: Sequence[Any]) -> list[np.ndarray]:
        maps: list[np.ndarray] = []
        for batch in chunks(images):
            out = loaded.model(**loaded.inputs(batch))
            sizes = [(img.height, img.width) for img in batch]
            done = loaded.processor.post_process_semantic_segmentation(out, target_sizes=sizes)
            maps += [m.cpu().numpy().astype(np.uint8) for m in done]
        return maps

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        names = loaded.id2label
        results = []
        for seg in self.segment(loaded, inputs):
            masks = [
                {"label": names[int(i)], "mask": encode_png(((seg == i) * 255).astype(np.uint8))}
                for i in np.unique(seg)
            ]
            results.append({"masks": masks})
        return results

    def respond(self, results: list[dict[str, Any]]) -> Any:
        return results[0]["masks"]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """Mean IoU, pixel accuracy and each class's IoU (classes named by the model)."""
        report = metrics_vision.segmentation(y, self.segment(loaded, x), loaded.id2label)
        return {"task": "image-segmentation", **report, **EMPTY}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        folder = data or self.sample_dir()
        x, y = self.from_directory(folder)
        labels_file = folder / "labels.json"
        probe = self.load(base)
        names = list(probe.id2label.values())
        loaded = probe
        if labels_file.is_file():
            raw = json.loads(labels_file.read_text())
            wanted = [str(raw[k]) for k in sorted(raw, key=int)]
            if wanted != names:
                names, loaded = wanted, self.load(base, **_relabel(wanted))
        batches = [
            loaded.inputs(xs, segmentation_maps=list(ys), do_reduce_labels=False)
            for xs, ys in zip(chunks(x), chunks(y), strict=True)
        ]
        loss = fine_tune(loaded.model, batches)
        return self.save(loaded, out, trained_on=len(x), labels=names, loss=loss)


# ---------------------------------------------------------------------- depth
class DepthEstimator(HubVision):
    """Monocular depth: a depth map per image. A dataset has ``images/<name>`` and
    ``depth/<stem>.png`` (16-bit grey, millimetres, 0 where unknown). DPT predicts relative
    inverse depth, so each prediction is fitted to the truth by scale and shift before the
    errors are measured (the MiDaS / DPT protocol)."""

    name = "dpt_depth"
    preset = "dpt-depth"
    repo = "Intel/dpt-large"
    auto = "AutoModelForDepthEstimation"
    samples = "depth"

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        from PIL import Image

        x, y = [], []
        for file in _images(path / "images"):
            x.append(read_image(file))
            with Image.open(path / "depth" / f"{file.stem}.png") as depth:
                y.append(np.asarray(depth, dtype=np.float64) / 1000.0)
        return x, y

    def test_set(self) -> tuple[list[Any], list[Any]]:
        return self.from_directory(self.sample_dir())

    @no_grad
    def estimate(self, loaded: Loaded, images: Sequence[Any]) -> list[np.ndarray]:
        maps: list[np.ndarray] = []
        for batch in chunks(images):
            out = loaded.model(**loaded.inputs(batch))
            sizes = [(img.height, img.width) for img in batch]
            done = loaded.processor.post_process_depth_estimation(out, target_sizes=sizes)
            maps += [d["predicted_depth"].cpu().numpy().astype(np.float64) for d in done]
        return maps

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        """The relative depth map as a 16-bit PNG spread over [min, max]."""
        results = []
        for d in self.estimate(loaded, inputs):
            low, high = float(d.min()), float(d.max())
            scaled = (d - low) / (high - low) if high > low else np.zeros_like(d)
            png = encode_png((scaled * 65535).round().astype(np.uint16))
            results.append({"depth": png, "min": round(low, 6), "max": round(high, 6)})
        return results

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        """AbsRel, RMSE (metres) and δ1 over the pixels with a known depth."""
        predicted = [
            metrics_vision.align_disparity(p, t)
            for p, t in zip(self.estimate(loaded, x), y, strict=True)
        ]
        return {"task": "depth-estimation", **metrics_vision.depth(y, predicted), **EMPTY}

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        """DPT has no training loss in ``transformers``: the new version is the base weights,
        saved as they are."""
        loaded = self.load(base)
        return self.save(
            loaded, out, fine_tuned=False, reason="depth estimation is not fine-tuned here"
        )


KINDS = {k.name: k for k in (Detector, Segmenter, DepthEstimator)}
