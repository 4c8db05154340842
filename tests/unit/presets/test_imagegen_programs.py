"""The super-resolution and Stable Diffusion programs on tiny random-weight models of the same
architectures in a temporary offline mirror, on the CPU: fine-tune (or copy), evaluate through
the runtime (the report's one shape, written to metrics.json), predict, parse."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from portal.presets import imaging, runtime
from portal.presets.catalog import get
from portal.presets.diffusion import fit
from portal.presets.inpainting import centre_mask
from portal.presets.kinds import Kind
from portal.presets.programs import KINDS
from portal.presets.superres import degrade
from tests.presets import tiny_imagegen

PRESETS = ("swin2sr-superres", "sd-inpainting", "sd-text-to-image", "sd-style-transfer")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mirror")
    for name in PRESETS:
        tiny_imagegen.BUILDERS[name](root)
    tiny_imagegen.clip(root)
    return root


def _kind(name: str, mirror: Path | None) -> Kind:
    preset = get(name)
    assert preset is not None
    assert preset.runtime is not None
    return KINDS[preset.runtime](mirror)


def _first_version(tmp_path: Path, name: str, **settings: Any) -> Path:
    """A preset's first version as the portal stages it: its settings in config.json."""
    preset = get(name)
    assert preset is not None
    path = tmp_path / "v1"
    path.mkdir(parents=True)
    cfg = {"preset": name, "base": preset.mirror, **settings}
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def _png(value: str) -> Image.Image:
    raw = base64.b64decode(value)
    assert raw.startswith(b"\x89PNG")
    return Image.open(io.BytesIO(raw)).convert("RGB")


def _b64(image: Image.Image) -> str:
    return imaging.encode(image)


def test_every_preset_of_this_family_has_a_tiny_model_under_2_mb(mirror: Path) -> None:
    for name in PRESETS:
        preset = get(name)
        assert preset is not None
        assert preset.runnable
        assert preset.mirror
        files = [f for f in (mirror / preset.mirror).rglob("*") if f.is_file()]
        assert sum(f.stat().st_size for f in files) < 2 * 1024**2, name
        assert not [f for f in files if f.suffix in (".bin", ".pt", ".pkl")], name


def test_a_missing_repository_names_the_fill_command(tmp_path: Path) -> None:
    for name in PRESETS:
        kind = _kind(name, tmp_path)
        with pytest.raises(FileNotFoundError, match=f"aipool models mirror fill {name}"):
            kind.load(_first_version(tmp_path / name, name))


# ---------------------------------------------------------------------- super-resolution
def test_degrading_crops_to_the_scale_and_halves() -> None:
    small, original = degrade(Image.new("RGB", (7, 5)), 2)
    assert (small.size, original.size) == ((3, 2), (6, 4))


def test_superres_fine_tunes_evaluates_and_serves(tmp_path: Path, mirror: Path) -> None:
    kind = _kind("swin2sr-superres", mirror)
    base = _first_version(tmp_path, "swin2sr-superres", steps=3)
    before = runtime.evaluate(kind, base, tmp_path / "ev1")
    assert before["task"] == "super-resolution"
    assert before["metrics"]["samples"] == 4
    assert 0 < before["metrics"]["psnr"] < 100
    assert 0 < before["metrics"]["ssim"] < 1
    assert [r["label"] for r in before["per_class"]] == [
        "astronaut.png",
        "chelsea.png",
        "coffee.png",
        "rocket.png",
    ]
    assert json.loads((tmp_path / "ev1" / "metrics.json").read_text()) == before
    with Image.open(tmp_path / "ev1" / "samples.png") as sheet:  # the four outputs, 128 high
        assert (sheet.format, sheet.size) == ("PNG", (4 * 128, 128))

    cfg = runtime.train(kind, base, tmp_path / "ft")
    assert cfg["steps"] == 3
    assert cfg["l1_loss"]["first"] > 0
    files = {p.name for p in (tmp_path / "ft" / "model").iterdir()}
    assert files == {"config.json", "model.safetensors", "preprocessor_config.json"}
    after = runtime.evaluate(kind, tmp_path / "ft" / "model", tmp_path / "ev2")
    assert after["metrics"]["psnr"] != before["metrics"]["psnr"]  # the weights changed

    loaded = kind.load(tmp_path / "ft" / "model")
    [request] = kind.parse({"image": _b64(Image.new("RGB", (20, 12), (200, 30, 30)))})
    [result] = kind.predict(loaded, [request])
    assert _png(result["image"]).size == (40, 24)
    assert (result["width"], result["height"]) == (40, 24)


def test_superres_reads_a_dataset_of_images(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    Image.new("RGB", (17, 9)).save(tmp_path / "a" / "one.png")
    Image.new("RGB", (8, 8)).save(tmp_path / "two.jpg")
    (tmp_path / "notes.txt").write_text("not an image")
    x, y = _kind("swin2sr-superres", None).from_directory(tmp_path)
    assert [name for name, _ in x] == ["a/one.png", "two.jpg"]
    assert [image.size for image in y] == [(16, 8), (8, 8)]
    with pytest.raises(ValueError, match="no images"):
        _kind("swin2sr-superres", None).from_directory(tmp_path / "a" / "empty")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "image: a base64 PNG or JPEG string."),
        ({"image": "not base64!"}, "image: a base64 PNG or JPEG string."),
        ({"image": base64.b64encode(b"GIF89a....").decode()}, "image: a base64 PNG"),
        ({"image": _b64(Image.new("RGB", (600, 10)))}, "at most 512 pixels"),
    ],
)
def test_superres_refuses_bad_images(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _kind("swin2sr-superres", None).parse(body)


# ---------------------------------------------------------------------- Stable Diffusion
def test_text_to_image_evaluates_with_the_clip_score(tmp_path: Path, mirror: Path) -> None:
    kind = _kind("sd-text-to-image", mirror)
    base = _first_version(tmp_path, "sd-text-to-image", steps=2)
    report = runtime.evaluate(kind, base, tmp_path / "ev")
    assert report["task"] == "text-to-image"
    assert (tmp_path / "ev" / "samples.png").read_bytes().startswith(b"\x89PNG")
    prompts = imaging.bundled()["text_to_image"]
    assert [r["label"] for r in report["per_class"]] == prompts
    scores = [r["clip_score"] for r in report["per_class"]]
    assert all(0 <= s <= 100 for s in scores)
    assert report["metrics"]["clip_score"] == pytest.approx(np.mean(scores), abs=1e-3)
    assert report["metrics"]["samples"] == 4
    assert report["metrics"]["latency_ms"] > 0

    # without a CLIP model in the mirror the report leaves the CLIP score out
    other = _first_version(tmp_path / "noclip", "sd-text-to-image", steps=1, clip="no/clip")
    bare = kind.evaluate(kind.load(other), prompts[:1], prompts[:1], tmp_path)
    assert set(bare["metrics"]) == {"latency_ms", "samples"}
    assert bare["per_class"] == [{"label": prompts[0]}]


def test_text_to_image_predicts_the_same_image_for_the_same_seed(
    tmp_path: Path, mirror: Path
) -> None:
    kind = _kind("sd-text-to-image", mirror)
    loaded = kind.load(_first_version(tmp_path, "sd-text-to-image"))
    requests = kind.parse({"prompt": "a red cat", "steps": 2, "seed": 7}) * 2
    requests += kind.parse({"prompt": "a red cat", "steps": 2, "seed": 8})
    first, again, other = kind.predict(loaded, requests)
    assert first == again
    assert first["seed"] == 7
    assert other["image"] != first["image"]
    assert _png(first["image"]).size == (loaded.size, loaded.size) == (32, 32)
    assert kind.respond([first]) == first


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "prompt: a text"),
        ({"prompt": " "}, "prompt: a text"),
        ({"prompt": "x" * 1001}, "prompt: a text"),
        ({"prompt": "a", "steps": 0}, "steps: a whole number"),
        ({"prompt": "a", "steps": True}, "steps: a whole number"),
        ({"prompt": "a", "guidance_scale": 31}, "guidance_scale"),
        ({"prompt": "a", "seed": -1}, "seed: a whole number"),
        ({"prompt": "a", "negative_prompt": 3}, "negative_prompt: a text"),
    ],
)
def test_text_to_image_refuses_bad_requests(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _kind("sd-text-to-image", None).parse(body)


def test_diffusion_train_copies_the_base_weights(tmp_path: Path, mirror: Path) -> None:
    kind = _kind("sd-text-to-image", mirror)
    cfg = runtime.train(kind, _first_version(tmp_path, "sd-text-to-image", steps=1), tmp_path)
    assert cfg["fine_tuned"] is False
    assert "not offered" in cfg["note"]
    model = tmp_path / "model"
    assert {p.name for p in model.iterdir()} >= {"model_index.json", "unet", "vae", "config.json"}
    assert json.loads((tmp_path / "result.json").read_text())["config"] == cfg
    # the copy loads without the mirror
    loaded = _kind("sd-text-to-image", None).load(model)
    assert loaded.settings["steps"] == 1


def test_inpainting_scores_outside_and_inside_the_mask(tmp_path: Path, mirror: Path) -> None:
    mask = np.asarray(centre_mask((8, 8))) > 0
    assert mask.sum() == 16
    assert mask[2:6, 2:6].all()
    kind = _kind("sd-inpainting", mirror)
    base = _first_version(tmp_path, "sd-inpainting", steps=2)
    report = runtime.evaluate(kind, base, tmp_path / "ev")
    assert report["task"] == "inpainting"
    assert (tmp_path / "ev" / "samples.png").read_bytes().startswith(b"\x89PNG")
    assert set(report["metrics"]) == {"psnr", "ssim", "latency_ms", "samples"}
    assert [r["label"] for r in report["per_class"]] == ["outside", "inside"]
    for row in report["per_class"]:
        assert 0 < row["psnr"] < 100
        assert -1 <= row["ssim"] <= 1
        assert row["samples"] == 4

    loaded = kind.load(base)
    image = Image.new("RGB", (40, 24), (10, 200, 10))
    [request] = kind.parse(
        {"image": _b64(image), "mask": _b64(centre_mask(image.size).convert("RGB")), "prompt": "a"}
    )
    [result] = kind.predict(loaded, [{**request, "steps": 2}])
    assert _png(result["image"]).size == (40, 24)
    with pytest.raises(ValueError, match="image: a base64"):
        kind.parse({"image": _b64(image), "prompt": "a"})


def test_inpainting_reads_images_masks_and_prompts(tmp_path: Path) -> None:
    Image.new("RGB", (16, 16)).save(tmp_path / "a.png")
    centre_mask((16, 16)).save(tmp_path / "a.mask.png")
    (tmp_path / "a.txt").write_text("a dog\n")
    Image.new("RGB", (16, 16)).save(tmp_path / "unmasked.png")
    x, y = _kind("sd-inpainting", None).from_directory(tmp_path)
    assert [(e["name"], e["prompt"]) for e in x] == [("a.png", "a dog")]
    assert len(y) == 1


def test_style_transfer_keeps_content_and_scores_the_style(tmp_path: Path, mirror: Path) -> None:
    kind = _kind("sd-style-transfer", mirror)
    base = _first_version(tmp_path, "sd-style-transfer", steps=2, strength=0.5)
    report = runtime.evaluate(kind, base, tmp_path / "ev")
    assert report["task"] == "style-transfer"
    assert (tmp_path / "ev" / "samples.png").read_bytes().startswith(b"\x89PNG")
    assert set(report["metrics"]) == {"ssim", "clip_score", "latency_ms", "samples"}
    styles = imaging.bundled()["style_transfer"]
    assert [r["label"] for r in report["per_class"]] == list(styles)

    loaded = kind.load(base)
    [request] = kind.parse({"image": _b64(Image.new("RGB", (30, 20))), "style": "a painting"})
    [result] = kind.predict(loaded, [request])
    assert _png(result["image"]).size == (30, 20)
    for strength in (0, 1.5, "high"):
        with pytest.raises(ValueError, match="strength"):
            kind.parse(
                {"image": _b64(Image.new("RGB", (8, 8))), "style": "a", "strength": strength}
            )


def test_style_transfer_reads_images_with_their_styles(tmp_path: Path) -> None:
    Image.new("RGB", (16, 16)).save(tmp_path / "a.png")
    (tmp_path / "a.txt").write_text("a watercolour\n")
    Image.new("RGB", (16, 16)).save(tmp_path / "b.png")
    x, y = _kind("sd-style-transfer", None).from_directory(tmp_path)
    assert [e["name"] for e in x] == ["a.png"]
    assert y == ["a watercolour"]


def test_fit_keeps_the_aspect_on_multiples_of_8() -> None:
    assert fit(Image.new("RGB", (128, 64)), 64).size == (64, 32)
    assert fit(Image.new("RGB", (30, 20)), 512).size == (512, 344)
