"""Domain errors raised by services, mapped to HTTP once, and the one error envelope: JSON for
the API (and the Jupyter proxy's calls), an error page for pages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

from portal.i18n import gettext, translate_message, translate_messages
from translations import N_


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


class Stale(DomainError):
    """An update made from an old copy: someone changed the object since the caller read it
    (its ETag, or the version a page's form carries, no longer matches). Nothing is saved."""

    status = 412
    code = "precondition_failed"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or gettext(STALE))


STALE = N_(
    "Someone else changed this since you loaded it, so your change was not saved. "
    "Reload it and make your change again."
)


def envelope(
    status: int, error: str, message: str, errors: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The body of every error the portal answers in JSON: the API's, the 401 of a call
    without a login, the Jupyter proxy's and its WebSockets' refusals. ``error`` is a short
    code a program can test (``not_found``, ``precondition_failed`` …), ``message`` a
    sentence for a person; ``errors`` the fields' messages where the input was wrong."""
    body: dict[str, Any] = {
        "code": status,
        "status": phrase(status),
        "error": error,
        "message": message,
    }
    if errors:
        body["errors"] = dict(errors)
    return body


#: the reason phrases as RFC 7231 names them: Python 3.13 renamed four after RFC 9110
#: ("Content Too Large", "URI Too Long", "Range Not Satisfiable", "Unprocessable Content"); API
#: clients read the codes, which must not change with the Python a site runs
PHRASES = {
    413: "Request Entity Too Large",
    414: "Request-URI Too Long",
    416: "Requested Range Not Satisfiable",
    422: "Unprocessable Entity",
}


def phrase(status: int) -> str:
    """The reason phrase of ``status``, the same on every supported Python."""
    return PHRASES.get(status) or HTTPStatus(status).phrase


def error_response(
    status: int,
    error: str,
    message: str,
    errors: Mapping[str, Any] | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Response:
    """:func:`envelope` as a JSON response, with the headers the status needs."""
    out = jsonify(envelope(status, error, message, errors))
    out.status_code = status
    for name, value in headers:
        out.headers[name] = value
    return out


def wants_json() -> bool:
    """Whether an error is answered in JSON: always on the API; on the Jupyter proxy unless a
    browser is navigating to a page (JupyterLab's own calls read JSON). Pages get HTML."""
    if request.path.startswith("/api/"):
        return True
    navigating = request.accept_mimetypes.best in ("text/html", "application/xhtml+xml")
    return request.blueprint == "jupyter_proxy" and not navigating


def register(app: Flask) -> None:
    @app.errorhandler(DomainError)
    def domain_error(exc: DomainError) -> Response | tuple[str, int]:
        if wants_json():
            fields = (
                {"json": translate_messages(exc.errors)}
                if isinstance(exc, ValidationFailed)
                else None
            )
            return error_response(exc.status, exc.code, exc.message, fields)
        return render_template("error.html", status=exc.status, message=exc.message), exc.status

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response | tuple[str, int]:
        if wants_json():
            return _http_error(exc)
        status = exc.code or 500
        message = translate_message(exc.description or "")
        return render_template("error.html", status=status, message=message), status


KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")  # what the client must be told


def _http_error(exc: HTTPException) -> Response:
    """An HTTP error (routing, webargs' input errors, CSRF, limits, a 500) in the envelope:
    webargs' field errors as ``errors``, a sentence as ``message``, and the headers the status
    needs: ``Allow`` on 405, ``Retry-After`` on 429."""
    from portal.extensions import api

    payload, status, extra = api.handle_http_exception(exc)
    errors = translate_messages(payload.get("errors"))
    if status == 413:
        limit = current_app.config["MAX_CONTENT_LENGTH"]
        message = gettext(
            "The request is larger than the portal accepts (%(limit)s).", limit=_size(limit)
        )
    elif status == 422 and not payload.get("message") and errors:
        message = gettext("Invalid input: %(problems)s", problems=_summary(errors))
    else:
        said = payload.get("message") or exc.description or HTTPStatus(status).description
        message = translate_message(str(said))
    code = phrase(status).lower().replace(" ", "_")
    headers = [*exc.get_headers(), *dict(extra or {}).items()]
    kept = [(name, value) for name, value in headers if name in KEPT_HEADERS]
    return error_response(status, code, message, errors, kept)


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
