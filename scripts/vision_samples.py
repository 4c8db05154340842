"""Write the image presets' bundled samples (portal/presets/data/vision/): small generated
images with their labels, boxes, masks and depths, the same on every run (fixed seed).

    .venv/bin/python scripts/vision_samples.py

They are drawn, not photographed, so they carry no licence but the project's own; they check
that a preset's pipeline runs end to end. A real measurement uses a dataset version in the
layout each program's ``from_directory`` documents (docs/models.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[1] / "portal" / "presets" / "data" / "vision"
SHAPES = ("circle", "square", "triangle")


def _draw(
    draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int], fill: object
) -> None:
    x0, y0, x1, y1 = box
    if shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "square":
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=fill)
    else:
        draw.polygon([((x0 + x1) // 2, y0), (x1 - 1, y1 - 1), (x0, y1 - 1)], fill=fill)


def _colour(rng: np.random.Generator, low: int, high: int) -> tuple[int, int, int]:
    return tuple(int(v) for v in rng.integers(low, high, 3))  # type: ignore[return-value]


def shapes(out: Path, rng: np.random.Generator, size: int = 48) -> None:
    """``{train,test}/<shape>/<n>.png``: one coloured shape on a light background."""
    for split, count in (("train", 4), ("test", 2)):
        for shape in SHAPES:
            folder = out / "shapes" / split / shape
            folder.mkdir(parents=True)
            for n in range(count):
                img = Image.new("RGB", (size, size), _colour(rng, 180, 255))
                side = int(rng.integers(size // 2, size - 8))
                x, y = (int(v) for v in rng.integers(2, size - side - 2, 2))
                _draw(ImageDraw.Draw(img), shape, (x, y, x + side, y + side), _colour(rng, 0, 140))
                img.save(folder / f"{n:02d}.png", optimize=True)


def xray(out: Path, rng: np.random.Generator, size: int = 48) -> None:
    """``{train,test}/{NORMAL,PNEUMONIA}/<n>.png``: a drawn chest outline (grey); the
    pneumonia ones with bright patches inside the dark lung fields."""
    for split, count in (("train", 3), ("test", 2)):
        for label in ("NORMAL", "PNEUMONIA"):
            folder = out / "xray" / split / label
            folder.mkdir(parents=True)
            for n in range(count):
                img = Image.new("L", (size, size), int(rng.integers(20, 40)))
                draw = ImageDraw.Draw(img)
                draw.ellipse((4, 2, size - 4, size + 10), fill=int(rng.integers(150, 190)))
                for x0 in (9, size // 2 + 2):
                    draw.ellipse((x0, 8, x0 + size // 2 - 11, size - 6), fill=40)
                if label == "PNEUMONIA":
                    for _ in range(3):
                        x, y = (int(v) for v in rng.integers(10, size - 14, 2))
                        draw.ellipse((x, y, x + 8, y + 6), fill=int(rng.integers(120, 170)))
                img.save(folder / f"{n:02d}.png", optimize=True)


def detection(out: Path, rng: np.random.Generator, size: int = 64) -> None:
    """``images/<n>.png`` and ``annotations.json`` (COCO: images, annotations with
    ``bbox`` = [x, y, width, height] in pixels, categories)."""
    folder = out / "detection" / "images"
    folder.mkdir(parents=True)
    categories = [{"id": i + 1, "name": s} for i, s in enumerate(SHAPES)]
    images, annotations = [], []
    for n in range(4):
        img = Image.new("RGB", (size, size), _colour(rng, 190, 255))
        draw = ImageDraw.Draw(img)
        for k, x in enumerate((2, size // 2 + 2)[: 1 + n % 2]):
            side = int(rng.integers(16, size // 2 - 4))
            y = int(rng.integers(2, size - side - 2))
            cat = (n + k) % len(SHAPES)
            _draw(draw, SHAPES[cat], (x, y, x + side, y + side), _colour(rng, 0, 120))
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": n + 1,
                    "category_id": cat + 1,
                    "bbox": [x, y, side, side],
                    "area": side * side,
                    "iscrowd": 0,
                }
            )
        name = f"{n:02d}.png"
        img.save(folder / name, optimize=True)
        images.append({"id": n + 1, "file_name": name, "width": size, "height": size})
    coco = {"images": images, "annotations": annotations, "categories": categories}
    (out / "detection" / "annotations.json").write_text(json.dumps(coco, indent=1) + "\n")


def segmentation(out: Path, rng: np.random.Generator, size: int = 64) -> None:
    """``images/<n>.png`` and ``masks/<n>.png`` (grey: the class id of each pixel, 255 where
    not labelled): background 0, a circle 1, a square 2."""
    for sub in ("images", "masks"):
        (out / "segmentation" / sub).mkdir(parents=True)
    for n in range(4):
        img = Image.new("RGB", (size, size), _colour(rng, 190, 255))
        mask = Image.new("L", (size, size), 0)
        for cls, shape, x in ((1, "circle", 4), (2, "square", size // 2 + 2)):
            side = int(rng.integers(16, size // 2 - 6))
            y = int(rng.integers(2, size - side - 2))
            box = (x, y, x + side, y + side)
            _draw(ImageDraw.Draw(img), shape, box, _colour(rng, 0, 120))
            _draw(ImageDraw.Draw(mask), shape, box, cls)
        img.save(out / "segmentation" / "images" / f"{n:02d}.png", optimize=True)
        mask.save(out / "segmentation" / "masks" / f"{n:02d}.png", optimize=True)


def depth(out: Path, rng: np.random.Generator, size: int = 48) -> None:
    """``images/<n>.png`` and ``depth/<n>.png`` (16-bit grey, millimetres; 0 where unknown):
    a floor receding from 1 m to 10 m, shaded by distance, and a box standing on it."""
    for sub in ("images", "depth"):
        (out / "depth" / sub).mkdir(parents=True)
    rows = np.linspace(10.0, 1.0, size)[:, None] * np.ones((1, size))
    for n in range(4):
        metres = rows.copy()
        side = int(rng.integers(10, 20))
        x, y = int(rng.integers(2, size - side - 2)), int(rng.integers(size // 3, size - side))
        metres[y : y + side, x : x + side] = metres[y + side - 1, x]
        tint = np.asarray(_colour(rng, 200, 255), dtype=float)
        rgb = (tint[None, None, :] / metres[..., None] ** 0.5).clip(0, 255).astype(np.uint8)
        Image.fromarray(rgb).save(out / "depth" / "images" / f"{n:02d}.png", optimize=True)
        mm = (metres * 1000).round().astype(np.uint16)
        Image.fromarray(mm).save(out / "depth" / "depth" / f"{n:02d}.png")


def main(out: Path = OUT) -> None:
    shutil.rmtree(out, ignore_errors=True)
    for make in (shapes, xray, detection, segmentation, depth):
        make(out, np.random.default_rng(0))


if __name__ == "__main__":
    main()
