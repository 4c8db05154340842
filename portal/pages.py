"""Helpers of the server-rendered pages (each package registers its own pages)."""

from __future__ import annotations

from typing import Any

from flask import flash
from flask_wtf import FlaskForm

from portal.errors import DomainError, ValidationFailed
from portal.i18n import translate_messages


def refusal(exc: DomainError) -> str:
    """A service's refusal as sentences for a flash: field errors without their keys."""
    if isinstance(exc, ValidationFailed):
        return " ".join(
            str(m)
            for messages in exc.errors.values()
            for m in (messages if isinstance(messages, list | tuple) else [messages])
        )
    return exc.message


def show_error(form: FlaskForm | None, exc: DomainError) -> None:
    """Field errors onto the form's fields where they exist; everything else as a flash
    (a library's or a job spec's English messages in the reader's language)."""
    if isinstance(exc, ValidationFailed) and form is not None:
        rest = {}
        for name, messages in translate_messages(exc.errors).items():
            field = getattr(form, name, None)
            if field is not None and hasattr(field, "errors"):
                field.errors = list(messages) if isinstance(messages, list) else [str(messages)]
            else:
                rest[name] = messages
        if rest:
            flash("; ".join(_lines(rest)), "error")
        return
    flash(exc.message, "error")


def _lines(errors: dict[str, Any]) -> list[str]:
    """Errors that no field of the form shows, one line each (a spec's already name their
    field: ``name: …``)."""
    out: list[str] = []
    for name, messages in errors.items():
        for m in messages if isinstance(messages, list) else [messages]:
            out.append(str(m) if name == "spec" else f"{name}: {m}")
    return out
