"""The image generation and restoration metrics on fixed inputs, against values worked out by
hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from portal.presets import metrics_imagegen as m
from tests.presets import tiny_imagegen


def test_psnr_of_one_changed_pixel() -> None:
    reference = np.zeros((4, 4), dtype=np.uint8)
    test = reference.copy()
    test[1, 2] = 10
    # MSE = 10² / 16 = 6.25; PSNR = 10·log10(255² / 6.25) = 10·log10(10404) = 40.1720 dB
    assert m.psnr(reference, test) == pytest.approx(10 * math.log10(10404), abs=1e-9)
    assert m.psnr(reference, test) == pytest.approx(40.1720, abs=1e-4)


def test_psnr_of_identical_images_is_capped() -> None:
    image = np.full((8, 8, 3), 7, dtype=np.uint8)
    assert m.psnr(image, image) == m.MAX_PSNR == 100.0


def test_ssim_of_two_flat_images() -> None:
    # flat images: no variance, so SSIM is the luminance term alone,
    # (2·100·110 + C1) / (100² + 110² + C1) with C1 = (0.01·255)² = 6.5025
    # = 22006.5025 / 22106.5025 = 0.995476
    a = np.full((8, 8, 3), 100, dtype=np.uint8)
    b = np.full((8, 8, 3), 110, dtype=np.uint8)
    assert m.ssim(a, b) == pytest.approx(22006.5025 / 22106.5025, abs=1e-6)
    assert m.ssim(a, b) == pytest.approx(0.995476, abs=1e-6)
    assert m.ssim(a, a) == pytest.approx(1.0)


def test_scores_inside_and_outside_a_region() -> None:
    reference = np.full((8, 8, 3), 100, dtype=np.uint8)
    test = reference.copy()
    test[:, 4:] = 110  # the right half changed by 10
    right = np.zeros((8, 8), dtype=bool)
    right[:, 4:] = True
    inside = m.region(reference, test, right)
    # inside: MSE = 10² = 100; PSNR = 10·log10(65025 / 100) = 28.1308 dB
    assert inside["psnr"] == pytest.approx(28.1308, abs=1e-4)
    # outside: unchanged pixels
    assert m.region(reference, test, ~right)["psnr"] == 100.0
    assert m.region(reference, test, np.zeros((8, 8), dtype=bool)) == {}
    # flat everywhere: the SSIM map is the flat-image value of the test above at every pixel
    flat = np.full((8, 8, 3), 110, dtype=np.uint8)
    assert m.region(reference, flat, right)["ssim"] == pytest.approx(0.995476, abs=1e-6)


def test_images_of_different_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in shape"):
        m.psnr(np.zeros((4, 4)), np.zeros((4, 5)))


def test_clip_score_is_100_times_the_clamped_cosine(tmp_path: Path) -> None:
    """The score of each pair against the cosine of the model's projected embeddings, taken
    here through the two towers separately."""
    import torch
    from PIL import Image
    from transformers import CLIPModel, CLIPProcessor

    tiny_imagegen.clip(tmp_path, "clip")
    images = [Image.new("RGB", (32, 32), c) for c in ((255, 0, 0), (0, 0, 255), (9, 9, 9))]
    texts = ["a red photo", "the blue sky", "a cat"]
    scores = m.clip_scores(tmp_path / "clip", images, texts)

    model = CLIPModel.from_pretrained(tmp_path / "clip")
    processor = CLIPProcessor.from_pretrained(tmp_path / "clip")
    inputs = processor(text=texts, images=images, return_tensors="pt", padding=True)
    with torch.no_grad():
        vision = model.vision_model(pixel_values=inputs["pixel_values"]).pooler_output
        text = model.text_model(
            input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]
        ).pooler_output
        i = model.visual_projection(vision)
        t = model.text_projection(text)
    cosine = torch.nn.functional.cosine_similarity(i, t).tolist()
    expected = [100 * max(c, 0.0) for c in cosine]
    assert scores == pytest.approx(expected, abs=1e-4)
    assert all(0 <= s <= 100 for s in scores)
    assert m.mean([1.0, 2.0, 6.0]) == 3.0
