"""What a file of a version looks like: an image's size, or the start of a text."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from portal.datasets.storage import Entry

TEXT_BYTES = 64 * 1024
# shown inline; anything else (SVG, HTML, …) is sent as a download only
INLINE_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"})


def media_type(path: str) -> str:
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "application/octet-stream"


def preview(directory: Path, entry: Entry, url: str) -> dict[str, Any]:
    kind, mt = "binary", media_type(entry.path)
    out: dict[str, Any] = {
        "path": entry.path, "size": entry.size, "url": url, "width": None, "height": None,
        "text": None, "truncated": False,
    }  # fmt: skip
    file = directory / entry.path
    if mt in INLINE_IMAGES:
        try:
            with Image.open(file) as img:
                out["width"], out["height"] = img.size
            kind = "image"
        except (UnidentifiedImageError, OSError):
            kind = "binary"
    else:
        with file.open("rb") as f:
            head = f.read(TEXT_BYTES + 1)
        if b"\x00" not in head:
            try:
                out["text"] = head[:TEXT_BYTES].decode("utf-8")
                out["truncated"] = len(head) > TEXT_BYTES
                kind, mt = "text", "text/plain"
            except UnicodeDecodeError:
                kind = "binary"
    out["kind"], out["media_type"] = kind, mt
    return out


def inline_type(path: str) -> str | None:
    """The type to show a file inline with, or ``None`` for a download."""
    mt = media_type(path)
    if mt in INLINE_IMAGES:
        return mt
    if mt.startswith("text/") or mt in ("application/json", "application/x-yaml"):
        return "text/plain; charset=utf-8"
    return None
