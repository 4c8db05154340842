"""Metrics of the image generation and restoration presets.

PSNR and SSIM come from scikit-image (``skimage.metrics``) on 8-bit RGB arrays
(``data_range=255``; SSIM over the colour channels with its default 7x7 window). Inside or
outside an inpainting mask, PSNR is taken over the region's pixels only and SSIM is the mean of
scikit-image's full SSIM map over the region.

The CLIP score is the one of Hessel et al. (2021) as torchmetrics and the diffusers
documentation define it: ``100 * max(cos(image embedding, text embedding), 0)`` with a CLIP
model's projected embeddings, averaged over the pairs. It is computed here with the
transformers CLIP model itself, read from the offline mirror.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: the PSNR of identical images (infinite) is reported as this many dB, so that reports stay
#: valid JSON
MAX_PSNR = 100.0


def _pair(reference: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if reference.shape != test.shape:
        raise ValueError(f"images differ in shape: {reference.shape} and {test.shape}")
    return reference.astype(np.uint8), test.astype(np.uint8)


def psnr(reference: np.ndarray, test: np.ndarray) -> float:
    """Peak signal-to-noise ratio in dB (``MAX_PSNR`` for identical images)."""
    from skimage.metrics import peak_signal_noise_ratio

    ref, out = _pair(reference, test)
    if np.array_equal(ref, out):
        return MAX_PSNR
    value = peak_signal_noise_ratio(ref, out, data_range=255)  # type: ignore[no-untyped-call]
    return min(MAX_PSNR, float(value))


def _ssim_map(reference: np.ndarray, test: np.ndarray) -> np.ndarray:
    from skimage.metrics import structural_similarity

    ref, out = _pair(reference, test)
    channel = -1 if ref.ndim == 3 else None
    _, full = structural_similarity(  # type: ignore[no-untyped-call]
        ref, out, data_range=255, channel_axis=channel, full=True
    )
    return np.asarray(full, dtype=float)


def ssim(reference: np.ndarray, test: np.ndarray) -> float:
    """Mean structural similarity (1 for identical images)."""
    from skimage.metrics import structural_similarity

    ref, out = _pair(reference, test)
    channel = -1 if ref.ndim == 3 else None
    score = structural_similarity(  # type: ignore[no-untyped-call]
        ref, out, data_range=255, channel_axis=channel
    )
    return float(score)


def region(reference: np.ndarray, test: np.ndarray, where: np.ndarray) -> dict[str, float]:
    """PSNR and SSIM of the pixels where ``where`` (an H x W boolean mask) is true; ``{}`` for
    an empty region."""
    ref, out = _pair(reference, test)
    where = np.asarray(where, dtype=bool)
    if not where.any():
        return {}
    full = _ssim_map(ref, out)
    if full.ndim == 3:
        full = full.mean(axis=2)
    return {"psnr": psnr(ref[where], out[where]), "ssim": float(full[where].mean())}


def clip_scores(model: Path, images: Sequence[Any], texts: Sequence[str]) -> list[float]:
    """The CLIP score of each (PIL image, text) pair with the CLIP model at ``model``."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    clip: Any = CLIPModel.from_pretrained(model)
    clip.eval()
    processor = CLIPProcessor.from_pretrained(model)
    inputs = processor(
        text=list(texts),
        images=list(images),
        return_tensors="pt",
        padding=True,
        truncation=True,
        max_length=77,
    )
    with torch.no_grad():
        output = clip(**inputs)
    image = output.image_embeds / output.image_embeds.norm(dim=-1, keepdim=True)
    text = output.text_embeds / output.text_embeds.norm(dim=-1, keepdim=True)
    cosine = (image * text).sum(dim=-1)
    return [float(v) for v in (100 * cosine.clamp(min=0)).tolist()]


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("no values to average")
    return float(np.mean(values))
