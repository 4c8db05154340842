"""Domain errors raised by services, mapped to HTTP once (JSON for the API, pages otherwise)."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException


class DomainError(Exception):
    status = 400
    code = "error"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code)
        self.message = message or self.code


class NotFound(DomainError):
    """Missing, or not visible to the caller (foreign tenants' objects read as missing)."""

    status = 404
    code = "not_found"


class Unauthorized(DomainError):
    status = 401
    code = "unauthorized"


class Forbidden(DomainError):
    status = 403
    code = "forbidden"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class QuotaExceeded(DomainError):
    status = 409
    code = "quota_exceeded"


class ValidationFailed(DomainError):
    """Field-level errors, in the same shape as webargs' (``{"field": ["message"]}``)."""

    status = 422
    code = "validation_failed"

    def __init__(self, errors: Mapping[str, Any]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = dict(errors)


class Unavailable(DomainError):
    """Not ready yet (a service's replicas, a Jupyter server starting)."""

    status = 503
    code = "unavailable"


class BadGateway(DomainError):
    """Something the portal forwards to (a node's server) did not answer."""

    status = 502
    code = "bad_gateway"


class SlurmUnavailable(DomainError):
    status = 503
    code = "slurm_unavailable"


def _wants_json() -> bool:
    return request.path.startswith("/api/")


def envelope(status: int, error: str, message: str) -> dict[str, Any]:
    """The body of every error the API answers."""
    return {"code": status, "status": HTTPStatus(status).phrase, "error": error, "message": message}


def register(app: Flask) -> None:
    @app.errorhandler(DomainError)
    def domain_error(exc: DomainError) -> tuple[Response | str, int]:
        if _wants_json():
            body = envelope(exc.status, exc.code, exc.message)
            if isinstance(exc, ValidationFailed):
                body["errors"] = {"json": exc.errors}
            return jsonify(body), exc.status
        return render_template("error.html", status=exc.status, message=exc.message), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[Response | str, int] | Response:
        if _wants_json():
            return _api_error(exc)
        status = exc.code or 500
        if status == 429 and request.endpoint == "identity_pages.login":
            return _sign_in_refused(exc)
        return render_template("error.html", status=status, message=exc.description), status


def _sign_in_refused(exc: HTTPException) -> Response:
    """Too many sign-ins: the sign-in page again, saying why and when to come back."""
    from portal.identity.pages import LoginForm

    page = render_template("identity/login.html", form=LoginForm(), refused=exc.description)
    out = current_app.make_response((page, 429))
    for name, value in exc.get_headers():
        if name == "Retry-After":
            out.headers[name] = value
    return out


KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")  # what the client must be told


def _api_error(exc: HTTPException) -> tuple[Response, int]:
    """flask-smorest's envelope (with webargs' field errors), plus a human ``message`` and the
    headers the status needs: ``Allow`` on 405, ``Retry-After`` on 429."""
    from portal.extensions import api

    payload, status, extra = api.handle_http_exception(exc)
    body = dict(payload)
    body.setdefault("error", HTTPStatus(status).phrase.lower().replace(" ", "_"))
    if status == 413:
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        body["message"] = f"the request is larger than the portal accepts ({_size(limit)})"
    elif status == 422 and not body.get("message") and body.get("errors"):
        body["message"] = f"invalid input: {_summary(body['errors'])}"
    elif not body.get("message"):
        body["message"] = exc.description or HTTPStatus(status).description
    out = jsonify(body)
    for name, value in [*exc.get_headers(), *dict(extra or {}).items()]:
        if name in KEPT_HEADERS:
            out.headers[name] = value
    return out, status


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _summary(errors: object, prefix: str = "") -> str:
    """webargs' nested ``{"json": {"field": ["message"]}}`` as ``field: message; …``."""
    if isinstance(errors, dict):
        parts = []
        for key, value in errors.items():
            inner = "" if key in ("json", "query", "form", "files", "_schema") else str(key)
            parts.append(_summary(value, f"{prefix}.{inner}".strip(".") if inner else prefix))
        return "; ".join(p for p in parts if p)
    if isinstance(errors, list):
        text = ", ".join(str(e) for e in errors if not isinstance(e, dict | list))
        nested = [_summary(e, prefix) for e in errors if isinstance(e, dict | list)]
        return "; ".join(x for x in [f"{prefix}: {text}" if prefix else text, *nested] if x)
    return f"{prefix}: {errors}" if prefix else str(errors)
