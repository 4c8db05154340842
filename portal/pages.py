"""Helpers of the server-rendered pages (each package registers its own pages)."""

from __future__ import annotations

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
            flash("; ".join(f"{k}: {v}" for k, v in rest.items()), "error")
        return
    flash(exc.message, "error")
