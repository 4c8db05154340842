"""Super-resolution (Swin2SR x2, transformers): fine-tune on high-resolution images, evaluate by
PSNR and SSIM against the originals of down-sampled images, serve ``{image}`` → ``{image}``.

The low-resolution input of every evaluated or trained image is the original down-sampled by
the model's scale with bicubic interpolation (the "bicubic degradation" of the classical
super-resolution benchmarks)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from portal.presets import devices, imaging, metrics_imagegen
from portal.presets.kinds import SEED, Kind
from translations import N_

REPO = "caidas/swin2SR-classical-sr-x2-64"
MAX_SIDE = 512  # of a served input: its output has four times the pixels


@dataclass(frozen=True)
class Loaded:
    model: Any
    processor: Any
    device: str
    scale: int


def _settings(path: Path) -> dict[str, Any]:
    """AIPool's settings of a version: ``config.json`` of a preset's first version (the hub
    repository in ``base``, training settings); a fine-tuned version's is the model's own."""
    file = path / "config.json"
    cfg = json.loads(file.read_text()) if file.is_file() else {}
    return cfg if "preset" in cfg else {}


def degrade(image: Any, scale: int) -> tuple[Any, Any]:
    """(low-resolution input, original cropped to a multiple of ``scale``)."""
    from PIL import Image

    w, h = (image.width // scale) * scale, (image.height // scale) * scale
    original = image.crop((0, 0, w, h))
    small = original.resize((w // scale, h // scale), Image.Resampling.BICUBIC)
    return small, original


class Swin2SRSuperResolution(Kind):
    name = "swin2sr_superres"
    preset = "swin2sr-superres"
    labels = ()

    def weights(self, model: Path) -> Path:
        if (model / "model.safetensors").is_file():  # a fine-tuned version holds its weights
            return model
        repo = str(_settings(model).get("base", REPO))
        return devices.hub_weights(self.mirror, repo, self.preset, "config.json")

    def load(self, model: Path) -> Loaded:
        imaging.offline()
        from transformers import AutoImageProcessor, Swin2SRForImageSuperResolution

        path = self.weights(model)
        device = devices.device()
        net: Any = Swin2SRForImageSuperResolution.from_pretrained(path)
        net = net.to(device).eval()
        auto: Any = AutoImageProcessor  # typed in some transformers releases, not in others
        processor = auto.from_pretrained(path)
        return Loaded(net, processor, device, int(net.config.upscale))

    def _forward(self, loaded: Loaded, images: Sequence[Any]) -> Any:
        """The model's output for PIL images, cropped to ``scale`` times their size (the
        processor pads to the window size at the bottom and right)."""
        pixels = loaded.processor(list(images), return_tensors="pt").pixel_values
        out = loaded.model(pixel_values=pixels.to(loaded.device)).reconstruction
        h, w = images[0].height * loaded.scale, images[0].width * loaded.scale
        return out[:, :, :h, :w]

    def upscale(self, loaded: Loaded, image: Any) -> Any:
        import torch
        from PIL import Image

        with torch.no_grad():
            out = self._forward(loaded, [image])[0]
        array = out.clamp(0, 1).permute(1, 2, 0).float().cpu().numpy()
        return Image.fromarray((array * 255).round().astype(np.uint8))

    def predict(self, loaded: Any, inputs: Sequence[Any]) -> list[dict[str, Any]]:
        results = []
        for image in inputs:
            big = self.upscale(loaded, image)
            results.append({"image": imaging.encode(big), "width": big.width, "height": big.height})
        return results

    def parse(self, body: dict[str, Any]) -> list[Any]:
        image = imaging.decode(body.get("image"))
        if max(image.size) > MAX_SIDE:
            raise ValueError(N_("image: at most 512 pixels wide and high for super-resolution."))
        return [image]

    # ------------------------------------------------------------------ evaluation
    def test_set(self) -> tuple[list[Any], list[Any]]:
        named = [(i["file"], imaging.bundled_image(i["file"])) for i in imaging.bundled()["images"]]
        return self._pairs(named)

    def from_directory(self, path: Path) -> tuple[list[Any], list[Any]]:
        """Any images (png, jpg, bmp, webp) anywhere under the directory: the originals; each
        is down-sampled x2 (bicubic) for the model and compared with its original."""
        return self._pairs(imaging.image_folder(path))

    @staticmethod
    def _pairs(named: list[tuple[str, Any]], scale: int = 2) -> tuple[list[Any], list[Any]]:
        x, y = [], []
        for name, image in named:
            small, original = degrade(image, scale)
            x.append((name, small))
            y.append(original)
        return x, y

    def evaluate(
        self, loaded: Any, x: Sequence[Any], y: Sequence[Any], out: Path
    ) -> dict[str, Any]:
        rows, took, images = [], [], []
        for (name, small), original in zip(x, y, strict=True):
            start = time.perf_counter()
            big = self.upscale(loaded, small)
            took.append((time.perf_counter() - start) * 1000)
            images.append(big)
            reference = imaging.rgb(original.crop((0, 0, big.width, big.height)))
            output = imaging.rgb(big)
            rows.append(
                {
                    "label": name,
                    "psnr": round(metrics_imagegen.psnr(reference, output), 4),
                    "ssim": round(metrics_imagegen.ssim(reference, output), 4),
                }
            )
        imaging.contact_sheet(images, out / "samples.png")
        metrics = {
            "psnr": round(metrics_imagegen.mean([r["psnr"] for r in rows]), 4),
            "ssim": round(metrics_imagegen.mean([r["ssim"] for r in rows]), 4),
            "latency_ms": round(metrics_imagegen.mean(took), 1),
            "samples": len(rows),
        }
        return {
            "task": "super-resolution",
            "metrics": metrics,
            "per_class": rows,
            "labels": [],
            "confusion": [],
        }

    # ------------------------------------------------------------------ fine-tuning
    def train(self, base: Path, out: Path, data: Path | None = None) -> dict[str, Any]:
        """A few steps of L1 training on random crops of the originals (a dataset's images,
        else the bundled ones), saved as safetensors with the processor."""
        import torch

        cfg = {"steps": 10, "learning_rate": 1e-5, "crop": 64, **_settings(base)}
        loaded = self.load(base)
        named = (
            imaging.image_folder(data)
            if data is not None
            else [
                (i["file"], imaging.bundled_image(i["file"])) for i in imaging.bundled()["images"]
            ]
        )
        torch.manual_seed(SEED)
        pick = np.random.default_rng(SEED)
        model = loaded.model.train()
        optimiser = torch.optim.Adam(model.parameters(), lr=float(cfg["learning_rate"]))
        losses = []
        for step in range(int(cfg["steps"])):
            _, image = named[step % len(named)]
            crop = min(int(cfg["crop"]), image.width, image.height)
            left = int(pick.integers(0, image.width - crop + 1))
            top = int(pick.integers(0, image.height - crop + 1))
            small, original = degrade(
                image.crop((left, top, left + crop, top + crop)), loaded.scale
            )
            target = torch.tensor(imaging.rgb(original)).permute(2, 0, 1)[None].float() / 255
            predicted = self._forward(loaded, [small])
            loss = torch.nn.functional.l1_loss(predicted, target.to(loaded.device))
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            losses.append(round(loss.item(), 6))
        model.eval().save_pretrained(out, safe_serialization=True)
        loaded.processor.save_pretrained(out)
        return {
            "preset": self.preset,
            "base": str(cfg.get("base", REPO)),
            "steps": int(cfg["steps"]),
            "trained_on": len(named),
            "l1_loss": {
                "first": losses[0] if losses else None,
                "last": losses[-1] if losses else None,
            },
        }


KINDS: dict[str, type[Kind]] = {Swin2SRSuperResolution.name: Swin2SRSuperResolution}
