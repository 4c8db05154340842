"""What the image generation and restoration programs share: hub weights from the offline
mirror, the device a job's cards give, images in requests (base64 PNG or JPEG), the bundled test
images, and a dataset's image folder."""

from __future__ import annotations

import base64
import binascii
import io
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from translations import N_

DATA = Path(__file__).with_name("data")
IMAGES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
MAX_IMAGE_BYTES = 8 * 1024 * 1024  # of a decoded request image
MAX_SIDE = 1024  # pixels, either side, of a request image
MAX_PROMPT = 1000


def offline() -> None:
    """Hub libraries never reach for the network in a job."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("DIFFUSERS_OFFLINE", "1")


def decode(value: Any) -> Any:
    """A PIL RGB image from a base64 PNG or JPEG string (a ``data:`` URL prefix is allowed)."""
    from PIL import Image, UnidentifiedImageError

    if not isinstance(value, str) or not value:
        raise ValueError(N_("image: a base64 PNG or JPEG string."))
    if value.startswith("data:") and "," in value:
        value = value.split(",", 1)[1]
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(N_("image: a base64 PNG or JPEG string.")) from None
    if len(raw) > MAX_IMAGE_BYTES:
        raise ValueError(N_("image: at most 8 MB."))
    try:
        with Image.open(io.BytesIO(raw)) as img:
            if max(img.size) > MAX_SIDE:
                raise ValueError(N_("image: at most 1024 pixels wide and high."))
            return img.convert("RGB")
    except (UnidentifiedImageError, OSError):
        raise ValueError(N_("image: a base64 PNG or JPEG string.")) from None


def encode(image: Any) -> str:
    """A PIL image as a base64 PNG string."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def contact_sheet(images: list[Any], path: Path, height: int = 128) -> None:
    """The images side by side, each scaled to ``height`` pixels high, as one PNG: what an
    evaluation produced, for a person to look at beside its numbers."""
    from PIL import Image

    scaled = [i.resize((max(1, round(i.width * height / i.height)), height)) for i in images]
    sheet = Image.new("RGB", (sum(i.width for i in scaled) or 1, height), (255, 255, 255))
    left = 0
    for image in scaled:
        sheet.paste(image, (left, 0))
        left += image.width
    sheet.save(path, format="PNG")


def rgb(image: Any) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.uint8)


@cache
def bundled() -> dict[str, Any]:
    """The bundled test set (``data/imagegen.yaml``)."""
    return yaml.safe_load((DATA / "imagegen.yaml").read_text())  # type: ignore[no-any-return]


def bundled_image(name: str) -> Any:
    from PIL import Image

    with Image.open(DATA / "images" / name) as img:
        return img.convert("RGB")


def image_folder(path: Path) -> list[tuple[str, Any]]:
    """The images of a dataset version, as ``(relative name, PIL RGB image)``, by name."""
    from PIL import Image

    found = []
    for file in sorted(path.rglob("*")):
        if file.suffix.lower() in IMAGES and file.is_file() and not file.is_symlink():
            with Image.open(file) as img:
                found.append((file.relative_to(path).as_posix(), img.convert("RGB")))
    if not found:
        raise ValueError(f"{path}: no images (png, jpg, bmp, webp)")
    return found


TEXT_ERRORS = {
    "prompt": N_("prompt: a text of 1 to 1000 characters."),
    "negative_prompt": N_("negative_prompt: a text of 1 to 1000 characters."),
    "style": N_("style: a text of 1 to 1000 characters."),
}


def text(body: dict[str, Any], name: str, *, required: bool) -> str | None:
    """A request's text field (``prompt``, ``negative_prompt``, ``style``), checked."""
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_PROMPT:
        raise ValueError(TEXT_ERRORS[name])
    return value


def options(body: dict[str, Any]) -> dict[str, Any]:
    """The optional generation settings of a request, checked."""
    out: dict[str, Any] = {}
    steps = body.get("steps")
    if steps is not None:
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 100:
            raise ValueError(N_("steps: a whole number from 1 to 100."))
        out["steps"] = steps
    scale = body.get("guidance_scale")
    if scale is not None:
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 <= scale <= 30:
            raise ValueError(N_("guidance_scale: a number from 0 to 30."))
        out["guidance_scale"] = float(scale)
    seed = body.get("seed")
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise ValueError(N_("seed: a whole number from 0."))
        out["seed"] = seed
    negative = text(body, "negative_prompt", required=False)
    if negative is not None:
        out["negative_prompt"] = negative
    return out
