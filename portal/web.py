"""Request plumbing shared by API views and pages: the caller, their access, CSRF, login."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar

from flask import Flask, Request, current_app, jsonify, redirect, request, url_for
from flask import session as flask_session
from flask.views import MethodView
from flask_login import current_user, login_required
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as BaseResponse

from portal.authz import Access, access_for
from portal.errors import Forbidden, envelope
from portal.extensions import csrf, db, login_manager
from portal.identity.models import User
from portal.identity.service import session_user, user_for_token

UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class AuthedView(MethodView):
    """An API resource for logged-in callers (session with CSRF, or a bearer token)."""

    decorators: ClassVar[list[Callable[..., Any]]] = [login_required]


def session() -> Session:
    return db.session  # type: ignore[return-value]


def caller() -> User:
    user = current_user._get_current_object()
    if not isinstance(user, User):
        raise Forbidden("login required")
    return user


def current_access() -> Access:
    return access_for(session(), caller())


SESSION_KEY = "aipool_session"  # the browser session's secret, in Flask's signed cookie


def session_max_age() -> timedelta:
    return timedelta(hours=float(current_app.config["SESSION_MAX_AGE_HOURS"]))


def bearer(req: Request) -> str | None:
    header = req.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def setting(name: str) -> Any:
    return current_app.config[name]


def install(app: Flask) -> None:
    login_manager.login_view = "identity_pages.login"

    @login_manager.user_loader
    def load_user(ident: str) -> User | None:
        if bearer(request) is not None:
            return None  # a bearer call is authenticated by its token only, never a cookie
        user_id, _, epoch = ident.partition(":")
        secret = flask_session.get(SESSION_KEY)
        if not user_id.isdigit() or not epoch.isdigit() or not isinstance(secret, str):
            return None
        user = session_user(session(), int(user_id), secret, max_age=session_max_age())
        if user is None or user.session_epoch != int(epoch):
            return None
        return user

    @login_manager.request_loader
    def load_from_token(req: Request) -> User | None:
        secret = bearer(req)
        return user_for_token(session(), secret) if secret else None

    @login_manager.unauthorized_handler
    def unauthorized() -> BaseResponse | tuple[BaseResponse, int]:
        if request.path.startswith("/api/"):
            return jsonify(envelope(401, "unauthorized", "login or token required")), 401
        return redirect(url_for("identity_pages.login", next=request.full_path))

    @app.before_request
    def check_csrf() -> None:
        """Writes made with a session cookie carry the CSRF token. Bearer calls have no cookie
        to forge; calls without a session have nothing to forge either (the login form checks
        its own token, and the views answer 401)."""
        if request.method not in UNSAFE or bearer(request) is not None:
            return
        if not current_user.is_authenticated:
            return
        if request.blueprint == "jupyter_proxy":  # Jupyter's own XSRF token, checked there
            return
        csrf.protect()

    @app.after_request
    def security_headers(response: BaseResponse) -> BaseResponse:
        """Every page of the portal's own: scripts and frames from the portal only, no
        referrer to other sites. Jupyter's pages (through the proxy) keep Jupyter's headers."""
        if request.blueprint != "jupyter_proxy":
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
        return response


# The pages have no inline script or event handler; one <style> block carries the site's colours.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
