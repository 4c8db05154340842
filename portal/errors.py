"""Domain errors raised by services, mapped to HTTP once (JSON for the API, pages otherwise)."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, jsonify, render_template, request
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


def register(app: Flask) -> None:
    @app.errorhandler(DomainError)
    def domain_error(exc: DomainError) -> tuple[Response | str, int]:
        if _wants_json():
            body: dict[str, Any] = {
                "code": exc.status,
                "status": HTTPStatus(exc.status).phrase,
                "error": exc.code,
                "message": exc.message,
            }
            if isinstance(exc, ValidationFailed):
                body["errors"] = {"json": exc.errors}
            return jsonify(body), exc.status
        return render_template("error.html", status=exc.status, message=exc.message), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[Response | str, int]:
        if _wants_json():
            from portal.extensions import api

            return api.handle_http_exception(exc)  # type: ignore[no-any-return]
        status = exc.code or 500
        return render_template("error.html", status=status, message=exc.description), status
