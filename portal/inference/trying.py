"""The "try it" form of an inference service: its fields read from the served version's input
schema, a prediction request built from what a person typed or uploaded, and the answer laid
out as a table where its shape is known.

The input schemas of the presets (portal/presets/catalog.yaml) name a few shapes, and each has
a field a person can fill in:

* ``texts`` (a list of strings): a text area, one text per line;
* a string (``text``, ``prompt``, ``question`` …): a text area;
* ``pixels`` (64 numbers, an 8x8 grey image on a 0-16 scale): an image upload, shrunk to 8x8;
* a base64 string (``image``): an image upload, sent as it is.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from portal.errors import ValidationFailed
from portal.i18n import gettext

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_LINES = 64


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # lines, text, pixels, image
    required: bool


def fields_of(schema: Mapping[str, Any]) -> list[Field]:
    """The fields of the form for an input schema (properties it cannot fill are left out:
    the API takes them)."""
    required = set(schema.get("required") or ())
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        kind = _kind(name, prop if isinstance(prop, Mapping) else {})
        if kind:
            out.append(Field(name, kind, name in required))
    return out


def _kind(name: str, prop: Mapping[str, Any]) -> str:
    found = prop.get("items")
    items: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if prop.get("type") == "array" and items.get("type") == "string":
        return "lines"
    if name == "pixels" and prop.get("type") == "array" and items.get("type") == "number":
        return "pixels"
    if prop.get("type") == "string":
        return "image" if prop.get("contentEncoding") == "base64" else "text"
    return ""


def body_of(
    fields: list[Field], form: Mapping[str, str], files: Mapping[str, IO[bytes] | None]
) -> dict[str, Any]:
    """The request body from the form; what is missing or unusable is a field error."""
    body: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for f in fields:
        try:
            value = _value(f, form.get(f.name, ""), files.get(f.name))
        except ValueError as exc:
            errors[f.name] = [str(exc)]
            continue
        if value is None:
            if f.required:
                errors[f.name] = [gettext("Fill this in.")]
        else:
            body[f.name] = value
    if errors:
        raise ValidationFailed(errors)
    if not fields:
        raise ValidationFailed({"": [gettext("This model's input cannot be given on a page.")]})
    return body


def _value(f: Field, text: str, upload: IO[bytes] | None) -> Any:
    if f.kind == "lines":
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) > MAX_LINES:
            raise ValueError(gettext("At most %(n)d lines.", n=MAX_LINES))
        return lines or None
    if f.kind == "text":
        return text.strip() or None
    data = upload.read(MAX_IMAGE_BYTES + 1) if upload is not None else b""
    if not data:
        return None
    if len(data) > MAX_IMAGE_BYTES:
        raise ValueError(gettext("The image is larger than 5 MiB."))
    if f.kind == "image":
        return base64.b64encode(data).decode()
    return pixels(data)


def pixels(data: bytes) -> list[float]:
    """An image as the 64 numbers of the 8x8 digits (0 = background, 16 = ink). Those digits
    are light on dark; a drawing on white paper is turned round so its ink is the light."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            # the mean of each cell: no ringing around strokes, as LANCZOS would add
            grey = img.convert("L").resize((8, 8), Image.Resampling.BOX)
            values = list(grey.tobytes())
    except (UnidentifiedImageError, OSError, ValueError):
        raise ValueError(gettext("This is not an image the portal can read.")) from None
    if sum(values) / len(values) > 127:
        values = [255 - v for v in values]
    return [round(v * 16 / 255, 2) for v in values]


def answer_rows(body: Mapping[str, Any], payload: Any) -> list[tuple[str, str, float | None]]:
    """The answer as (input, label, score) rows where its shape is known (a label with
    probabilities, labels with scores); an empty list otherwise (the page shows the JSON)."""
    if not isinstance(payload, Mapping):
        return []
    if isinstance(payload.get("labels"), list):
        texts = body.get("texts") or [""] * len(payload["labels"])
        scores = payload.get("scores") or [None] * len(payload["labels"])
        return [
            (str(t), str(label), _score(s))
            for t, label, s in zip(texts, payload["labels"], scores, strict=False)
        ]
    if "label" in payload:
        probs = payload.get("probabilities")
        score = _score(probs.get(payload["label"])) if isinstance(probs, Mapping) else None
        return [("", str(payload["label"]), score)]
    return []


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None
