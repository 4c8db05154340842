"""The image-understanding metrics on fixed inputs, against values worked out by hand; the
bundled samples they are measured on, drawn again by their script."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from portal.presets import metrics_vision

COCO = {
    "images": [{"id": 1, "width": 40, "height": 40}],
    "annotations": [
        {
            "id": 1,
            "image_id": 1,
            "category_id": 1,
            "bbox": [0, 0, 10, 10],
            "area": 100,
            "iscrowd": 0,
        },
        {
            "id": 2,
            "image_id": 1,
            "category_id": 2,
            "bbox": [20, 20, 10, 10],
            "area": 100,
            "iscrowd": 0,
        },
    ],
    "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "owl"}],
}


def test_detection_map_from_cocoeval() -> None:
    detections = [
        # the cat exactly: IoU 1 passes all ten thresholds .50:.05:.95 -> AP 1
        {"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
        # the dog's box cut to 10 x 7.2: IoU 72 / 100 = 0.72 passes .50 .55 .60 .65 .70 and
        # fails .75 … .95 -> AP (1+1+1+1+1+0+0+0+0+0) / 10 = 0.5
        {"image_id": 1, "category_id": 2, "bbox": [20, 20, 10, 7.2], "score": 0.8},
    ]
    report = metrics_vision.detection(COCO, detections)
    # mAP = (1 + 0.5) / 2; at IoU .50 both match: (1 + 1) / 2; at .75 only the cat: (1 + 0) / 2
    assert report["metrics"] == {"map": 0.75, "map_50": 1.0, "map_75": 0.5, "samples": 1}
    # the owl has no ground truth: COCOeval gives it -1, it is left out
    assert report["per_class"] == [{"label": "cat", "ap": 1.0}, {"label": "dog", "ap": 0.5}]


def test_detection_of_nothing_scores_zero() -> None:
    report = metrics_vision.detection(COCO, [])
    assert report["metrics"]["map"] == 0.0
    assert [row["label"] for row in report["per_class"]] == ["cat", "dog"]


def test_segmentation_iou_and_pixel_accuracy() -> None:
    truth = [np.array([[0, 0], [1, 1], [255, 1]])]
    predicted = [np.array([[0, 1], [1, 1], [0, 0]])]
    report = metrics_vision.segmentation(truth, predicted, {0: "sky", 1: "road"})
    # the 255 pixel does not count; of the other 5: truth 0 0 1 1 1, predicted 0 1 1 1 0
    # class 0: TP 1, FP 1 (the last pixel), FN 1 (the second) -> IoU 1 / 3
    # class 1: TP 2, FP 1 (the second), FN 1 (the last) -> IoU 2 / 4 = 0.5
    # mIoU = (1/3 + 1/2) / 2 = 5/12; pixel accuracy = 3 right of 5
    assert report["metrics"] == {
        "miou": pytest.approx(5 / 12, abs=1e-6),
        "pixel_accuracy": 0.6,
        "samples": 1,
    }
    assert report["per_class"] == [
        {"label": "sky", "iou": pytest.approx(1 / 3, abs=1e-6), "support": 2},
        {"label": "road", "iou": 0.5, "support": 3},
    ]


def test_depth_errors() -> None:
    truth = [np.array([1.0, 2.0, 4.0, 0.0])]  # 0: unknown, left out
    predicted = [np.array([1.1, 2.0, 2.0, 9.0])]
    report = metrics_vision.depth(truth, predicted)
    # AbsRel = (0.1/1 + 0/2 + 2/4) / 3 = 0.2
    # RMSE = sqrt((0.01 + 0 + 4) / 3) = sqrt(1.336667) = 1.156143
    # δ1: ratios 1.1, 1, 2 -> 2 of 3 under 1.25
    assert report["metrics"] == {
        "abs_rel": pytest.approx(0.2, abs=1e-6),
        "rmse": pytest.approx(1.156143, abs=1e-6),
        "delta1": pytest.approx(2 / 3, abs=1e-6),
        "samples": 1,
    }
    assert report["per_class"] == []


def test_relative_inverse_depth_is_fitted_by_scale_and_shift() -> None:
    depth = np.array([[1.0, 2.0], [4.0, 0.0]])
    # a disparity off by scale 3 and shift 0.5 (the unknown pixel predicts anything)
    predicted = np.array([[3 * 1.0 + 0.5, 3 * 0.5 + 0.5], [3 * 0.25 + 0.5, 7.0]])
    aligned = metrics_vision.align_disparity(predicted, depth)
    assert aligned[depth > 0] == pytest.approx([1.0, 2.0, 4.0])


def test_the_bundled_samples_are_what_their_script_draws(tmp_path: Path) -> None:
    """portal/presets/data/vision is reproducible: the script draws the same pixels, boxes,
    masks and depths again (compared decoded, not as PNG bytes)."""
    import importlib.util
    import json

    from PIL import Image

    from portal.presets.vision import SAMPLES

    root = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location("samples", root / "scripts/vision_samples.py")
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(tmp_path)
    drawn = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    bundled = sorted(p.relative_to(SAMPLES) for p in SAMPLES.rglob("*") if p.is_file())
    assert drawn == bundled
    assert len(drawn) == 49
    for rel in drawn:
        if rel.suffix == ".png":
            with Image.open(tmp_path / rel) as a, Image.open(SAMPLES / rel) as b:
                assert a.mode == b.mode, rel
                assert np.array_equal(np.asarray(a), np.asarray(b)), rel
        else:
            assert json.loads((tmp_path / rel).read_text()) == json.loads(
                (SAMPLES / rel).read_text()
            )
