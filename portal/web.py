"""Request plumbing shared by API views and pages: the caller, their access, CSRF, login, and
the versions (ETags) that keep two admins' updates from overwriting each other."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

import flask_smorest
from flask import Flask, Request, current_app, redirect, request, url_for
from flask import session as flask_session
from flask.views import MethodView
from flask_login import current_user, login_required
from flask_smorest.exceptions import PreconditionFailed
from marshmallow import Schema
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response as BaseResponse

from portal.authz import Access, access_for
from portal.errors import Forbidden, Stale, error_response, wants_json
from portal.extensions import csrf, db, login_manager
from portal.i18n import gettext
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


Row = TypeVar("Row")


class Blueprint(flask_smorest.Blueprint):
    """flask-smorest's blueprint with the portal's ETag rules. A view marked ``@blp.etag``
    answers a GET with the object's ``ETag``; its PUT, PATCH or DELETE calls
    ``blp.check_etag(current, schema)`` first, and an ``If-Match`` that is not the current ETag
    is refused with 412 in the error envelope before anything changes.

    ``If-Match`` is optional (flask-smorest would answer 428 without it): existing clients,
    scripts and the CLI send none, and their updates apply as before. A client that read
    the object and edits it sends the ETag it read; the pages always send theirs."""

    def _check_precondition(self) -> None:
        """No 428 for an update without ``If-Match`` (see the class)."""

    def check_etag(self, etag_data: Any, etag_schema: Any = None) -> None:
        if not request.if_match:
            return
        try:
            super().check_etag(etag_data, etag_schema)
        except PreconditionFailed:
            raise Stale() from None

    def _verify_check_etag(self) -> None:
        if request.if_match:  # only a conditional update is checked, so only it must be
            super()._verify_check_etag()

    def _prepare_etag_doc(self, doc: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        out = super()._prepare_etag_doc(doc, *args, **kwargs)
        out.get("responses", {}).pop(428, None)
        return out


def version_of(data: Any, schema: type[Schema] | Schema | None = None) -> str:
    """The ETag of ``data`` (dumped by ``schema``) as the API computes it, without quotes: the
    version a page's form carries from the moment it was rendered."""
    if schema is not None:
        data = (schema() if isinstance(schema, type) else schema).dump(data)
    return str(Blueprint._generate_etag(data))


def check_version(
    submitted: str | None,
    data: Any,
    schema: type[Schema] | Schema | None = None,
    *,
    message: str = "",
) -> None:
    """A page's save: :class:`~portal.errors.Stale` with ``message`` (nothing saved) when the
    form was rendered from another version than the object has now. A post without the
    field (a client that never read the page) is not checked, as an API update without
    ``If-Match``."""
    if submitted and submitted != version_of(data, schema):
        raise Stale(message)


def locked(row: Row) -> Row:
    """``row`` read again under a row lock (``SELECT … FOR UPDATE``), so that a version check
    and the write that follows see the same version, and a second update of the row waits
    for the first to commit (PostgreSQL; SQLite, which writes one transaction at a time,
    takes no row locks)."""
    # only the row's own table: PostgreSQL locks no outer-joined (eagerly loaded) rows
    session().refresh(row, with_for_update={"of": type(row)})
    return row


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
    def unauthorized() -> BaseResponse:
        if wants_json():
            return error_response(
                401, "unauthorized", gettext("Sign in, or send an API token, first.")
            )
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
