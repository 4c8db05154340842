"""Schema helpers shared by the resources: bounded text without control characters."""

from __future__ import annotations

import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

# a pattern, not a function, so the OpenAPI document states the rule too
_no_control = validate.Regexp(
    re.compile(r"^[^\x00-\x1f\x7f]*$"), error="control characters are not allowed"
)


def _checks(length: validate.Length, extra: Any) -> list[Any]:
    """The length check, then the field's own ``validate=`` (one validator or a list). A
    field with its own pattern states the allowed characters itself (OpenAPI shows one
    pattern per field), so the no-control-characters pattern is added only without one."""
    more = [] if extra is None else list(extra) if isinstance(extra, list | tuple) else [extra]
    own_pattern = any(isinstance(getattr(v, "regex", None), re.Pattern) for v in more)
    return [length, *([] if own_pattern else [_no_control]), *more]


def text(max_len: int, *, required: bool = False, **kwargs: Any) -> fields.String:
    """One line of text, at most ``max_len`` characters (plus any ``validate=`` given)."""
    return fields.String(
        required=required,
        validate=_checks(validate.Length(max=max_len), kwargs.pop("validate", None)),
        **kwargs,
    )


def name(max_len: int = 32, *, required: bool = True, **kwargs: Any) -> fields.String:
    return fields.String(
        required=required,
        validate=_checks(validate.Length(min=1, max=max_len), kwargs.pop("validate", None)),
        **kwargs,
    )


def limit(**kwargs: Any) -> fields.Integer:
    return fields.Integer(
        allow_none=True, strict=True, validate=validate.Range(min=0, max=2**31 - 1), **kwargs
    )


class Message(Schema):
    message = fields.String()


def ident(*, query: bool = False, **kwargs: Any) -> fields.Integer:
    """A row id: 1 … 2³¹-1, as every database's integer key holds it. Strictly a JSON number in
    bodies; parsed from text in query strings."""
    return fields.Integer(strict=not query, validate=validate.Range(min=1, max=2**31 - 1), **kwargs)


class ChangeSchema(Schema):
    """The body of a ``PATCH``: at least one field to change (an empty one is a mistake, not a
    success that changed nothing)."""

    @validates_schema
    def _something(self, data: dict[str, Any], **_kwargs: Any) -> None:
        if not data:
            raise ValidationError("give at least one field to change")
