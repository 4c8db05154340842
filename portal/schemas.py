"""Schema helpers shared by the resources: bounded text without control characters."""

from __future__ import annotations

import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _no_control(value: str) -> None:
    if _CONTROL.search(value):
        raise ValidationError("control characters are not allowed")


def text(max_len: int, *, required: bool = False, **kwargs: Any) -> fields.String:
    """One line of text, at most ``max_len`` characters."""
    return fields.String(
        required=required,
        validate=[validate.Length(max=max_len), _no_control],
        **kwargs,
    )


def name(max_len: int = 32, *, required: bool = True, **kwargs: Any) -> fields.String:
    return fields.String(
        required=required,
        validate=[validate.Length(min=1, max=max_len), _no_control],
        **kwargs,
    )


def limit(**kwargs: Any) -> fields.Integer:
    return fields.Integer(allow_none=True, strict=True, validate=validate.Range(min=0), **kwargs)


class Message(Schema):
    message = fields.String()
