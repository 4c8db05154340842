"""Metrics of the image-understanding presets: detection mAP (pycocotools' COCOeval),
semantic segmentation IoU from the pixel confusion matrix (scikit-learn), and monocular depth
errors (scikit-learn's regression errors, the usual δ < 1.25 ratio)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

import numpy as np


def _r(value: float) -> float:
    return round(float(value), 6)


def detection(coco: dict[str, Any], detections: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """COCO box mAP of ``detections`` (``{image_id, category_id, bbox: [x, y, w, h], score}``)
    against the COCO ground truth ``coco``: ``map`` (IoU .50:.95), ``map_50``, ``map_75`` and
    each category's ``ap`` (IoU .50:.95). A category with no ground truth scores -1 in COCOeval;
    it is left out of the table."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = COCO()
    gt.dataset = {"info": {}, **coco}
    with contextlib.redirect_stdout(io.StringIO()):  # COCOeval prints its progress
        gt.createIndex()
        if not detections:
            return _no_detections(coco)
        dt = gt.loadRes([dict(d) for d in detections])
        ev = COCOeval(gt, dt, iouType="bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    # precision[t, r, k, a, m]: IoU threshold, recall, category, area "all", 100 detections
    precision = ev.eval["precision"][:, :, :, 0, -1]
    per_class = []
    for k, cat in enumerate(ev.params.catIds):
        p = precision[:, :, k]
        if (p > -1).any():
            name = gt.cats[cat]["name"]
            per_class.append({"label": name, "ap": _r(np.mean(p[p > -1]))})
    return {
        "metrics": {
            "map": _r(max(ev.stats[0], 0.0)),
            "map_50": _r(max(ev.stats[1], 0.0)),
            "map_75": _r(max(ev.stats[2], 0.0)),
            "samples": len(coco["images"]),
        },
        "per_class": per_class,
    }


def _no_detections(coco: dict[str, Any]) -> dict[str, Any]:
    """Nothing detected: every AP is 0 (COCOeval cannot load an empty result)."""
    present = {a["category_id"] for a in coco["annotations"]}
    names = [c["name"] for c in coco["categories"] if c["id"] in present]
    return {
        "metrics": {"map": 0.0, "map_50": 0.0, "map_75": 0.0, "samples": len(coco["images"])},
        "per_class": [{"label": n, "ap": 0.0} for n in names],
    }


def segmentation(
    truth: Sequence[np.ndarray],
    predicted: Sequence[np.ndarray],
    labels: dict[int, str],
    ignore: int = 255,
) -> dict[str, Any]:
    """Pixel accuracy, mean IoU over the classes present in the truth or the prediction, and
    each class's IoU = TP / (TP + FP + FN), from the pixel confusion matrix; pixels labelled
    ``ignore`` do not count."""
    from sklearn.metrics import confusion_matrix

    y = np.concatenate([np.asarray(t).ravel() for t in truth])
    p = np.concatenate([np.asarray(q).ravel() for q in predicted])
    keep = y != ignore
    y, p = y[keep], p[keep]
    ids = sorted(set(np.unique(y).tolist()) | set(np.unique(p).tolist()))
    cm = confusion_matrix(y, p, labels=ids)
    tp = np.diag(cm).astype(float)
    union = cm.sum(axis=0) + cm.sum(axis=1) - tp
    iou = np.divide(tp, union, out=np.zeros_like(tp), where=union > 0)
    return {
        "metrics": {
            "miou": _r(iou.mean()) if ids else 0.0,
            "pixel_accuracy": _r(tp.sum() / max(cm.sum(), 1)),
            "samples": len(truth),
        },
        "per_class": [
            {"label": labels.get(i, str(i)), "iou": _r(iou[k]), "support": int(cm[k].sum())}
            for k, i in enumerate(ids)
        ],
    }


def align_disparity(predicted: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Depth from a relative inverse-depth map (what MiDaS / DPT predict): the scale and shift
    that best fit it to the true inverse depth (least squares over the valid pixels), as the
    MiDaS and DPT papers evaluate such models."""
    valid = depth > 0
    target = 1.0 / depth[valid]
    a = np.stack([predicted[valid], np.ones(valid.sum())], axis=1)
    (scale, shift), *_ = np.linalg.lstsq(a, target, rcond=None)
    aligned = scale * predicted + shift
    floor = 1.0 / depth[valid].max() / 10  # no negative or zero disparity
    return np.asarray(1.0 / np.maximum(aligned, floor))


def depth(truth: Sequence[np.ndarray], predicted: Sequence[np.ndarray]) -> dict[str, Any]:
    """``abs_rel`` = mean |d - d*| / d*, ``rmse`` (in the truth's unit) and ``delta1`` = the
    share of pixels with max(d / d*, d* / d) < 1.25, over the pixels with a true depth > 0."""
    from sklearn.metrics import mean_absolute_percentage_error, root_mean_squared_error

    y = np.concatenate([np.asarray(t, dtype=float).ravel() for t in truth])
    p = np.concatenate([np.asarray(q, dtype=float).ravel() for q in predicted])
    valid = y > 0
    y, p = y[valid], p[valid]
    ratio = np.maximum(p / y, y / p)
    return {
        "metrics": {
            "abs_rel": _r(mean_absolute_percentage_error(y, p)),
            "rmse": _r(root_mean_squared_error(y, p)),
            "delta1": _r(np.mean(ratio < 1.25)),
            "samples": len(truth),
        },
        "per_class": [],
    }
