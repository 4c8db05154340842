"""Stable Diffusion inpainting (diffusers): repaint the masked part of an image from a prompt.

Evaluation masks the centre of each bundled image (a quarter of each side in from the edges),
repaints it from a prompt describing what was there, and compares the result with the original
by PSNR and SSIM over the whole image (the report's metrics) and outside and inside the mask (its
two rows)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from portal.presets import imaging, metrics_imagegen
from portal.presets.diffusion import DiffusionKind, Loaded, fit
from portal.presets.kinds import SEED, Kind

REPO = "sd2-community/stable-diffusion-2-inpainting"


def centre_mask(size: tuple[int, int]) -> Any:
    """White (repaint) from a quarter to three quarters of each side, black elsewhere."""
    from PIL import Image, ImageDraw

    w, h = size
    mask = Image.new("L", size, 0)
    ImageDraw.Draw(mask).rectangle((w // 4, h // 4, (3 * w) // 4 - 1, (3 * h) // 4 - 1), fill=255)
    return mask


class StableDiffusionInpainting(DiffusionKind):
    name = "sd_inpainting"
    preset = "sd-inpainting"
    repo = REPO
    pipeline_class = "StableDiffusionInpaintPipeline"
    task = "inpainting"

    def call(self, loaded: Loaded, request: dict[str, Any]) -> dict[str, Any]:
        image = fit(request["image"], loaded.size)
        mask = request["mask"].convert("L").resize(image.size)
        return {
            "prompt": request["prompt"],
            "image": image,
            "mask_image": mask,
            "width": image.width,
            "height": image.height,
        }

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return [
            {
                "image": imaging.decode(body.get("image")),
                "mask": imaging.decode(body.get("mask")),
                "prompt": imaging.text(body, "prompt", required=True),
                **imaging.options(body),
            }
        ]

    def test_set(self) -> tuple[list[Any], list[Any]]:
        x, y = [], []
        for name, prompt in imaging.bundled()["inpainting"].items():
            image = imaging.bundled_image(name)
            x.append(
                {"name": name, "image": image, "mask": centre_mask(image.size), "prompt": prompt}
            )
            y.append(image)
        return x, y

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """``<name>.png`` (or jpg, bmp, webp) with its mask ``<name>.mask.png`` (white where to
        repaint) and, optionally, its prompt ``<name>.txt``; images without a mask are left
        out."""
        x, y = [], []
        named = dict(imaging.image_folder(path))
        for name, image in named.items():
            stem = Path(name).with_suffix("")
            mask = named.get(f"{stem}.mask.png")
            if mask is None or name.endswith(".mask.png"):
                continue
            prompt_file = path / stem.with_suffix(".txt")
            prompt = prompt_file.read_text().strip() if prompt_file.is_file() else ""
            x.append({"name": name, "image": image, "mask": mask, "prompt": prompt})
            y.append(image)
        if not x:
            raise ValueError(f"{path}: no <name>.png with a <name>.mask.png beside it")
        return x, y

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        whole: list[dict[str, float]] = []
        parts: dict[str, list[dict[str, float]]] = {"outside": [], "inside": []}
        took, images = [], []
        for i, (example, original) in enumerate(zip(x, y, strict=True)):
            start = time.perf_counter()
            image = self.generate(loaded, example, SEED + i)
            took.append((time.perf_counter() - start) * 1000)
            images.append(image)
            reference = imaging.rgb(fit(original, loaded.size).resize(image.size))
            output = imaging.rgb(image)
            masked = np.asarray(example["mask"].convert("L").resize(image.size)) >= 128
            whole.append(
                {
                    "psnr": metrics_imagegen.psnr(reference, output),
                    "ssim": metrics_imagegen.ssim(reference, output),
                }
            )
            for label, where in (("outside", ~masked), ("inside", masked)):
                scores = metrics_imagegen.region(reference, output, where)
                if scores:
                    parts[label].append(scores)
        imaging.contact_sheet(images, out / "samples.png")
        rows = [
            {
                "label": label,
                "psnr": round(metrics_imagegen.mean([s["psnr"] for s in scores]), 4),
                "ssim": round(metrics_imagegen.mean([s["ssim"] for s in scores]), 4),
                "samples": len(scores),
            }
            for label, scores in parts.items()
            if scores
        ]
        report = self.report(
            [{k: round(v, 4) for k, v in w.items()} for w in whole], took, ["psnr", "ssim"]
        )
        report["per_class"] = rows
        return report


KINDS: dict[str, type[Kind]] = {StableDiffusionInpainting.name: StableDiffusionInpainting}
