"""Pages: login, logout and password change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask import session as flask_session
from flask_login import login_required, login_user, logout_user
from flask_wtf import FlaskForm
from werkzeug.exceptions import TooManyRequests
from werkzeug.wrappers import Response
from wtforms import PasswordField, StringField
from wtforms.validators import DataRequired, Length

from portal.errors import Forbidden, ValidationFailed
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.identity import service
from portal.identity.limits import sign_in_limits
from portal.identity.models import User
from portal.web import SESSION_KEY, caller, session, session_max_age, setting

bp = Blueprint("identity_pages", __name__)


class LoginForm(FlaskForm):
    username = StringField(_l("User name"), validators=[DataRequired(), Length(max=32)])
    password = PasswordField(_l("Password"), validators=[DataRequired(), Length(max=1024)])


class PasswordForm(FlaskForm):
    current_password = PasswordField(_l("Current password"), validators=[DataRequired()])
    new_password = PasswordField(_l("New password"), validators=[DataRequired()])


def _safe_next(target: str | None) -> str:
    """Only local paths: never redirect to another site after login."""
    if not target:
        return url_for("dashboard.index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return url_for("dashboard.index")
    return target


def _limited(view: Callable[..., Any]) -> Callable[..., Any]:
    for limit in reversed(sign_in_limits()):
        view = limit(view)
    return view


@bp.route("/login", methods=["GET", "POST"])
@_limited
def login() -> str | Response | tuple[str, int]:
    form = LoginForm()
    if form.validate_on_submit():
        username, password = form.username.data or "", form.password.data or ""
        user = service.authenticate(session(), username, password)
        if user is not None:
            _sign_in(user)
            return redirect(_safe_next(request.args.get("next")))
        flash(gettext("Wrong user name or password."), "error")
        return render_template("identity/login.html", form=form), 401
    if form.is_submitted():  # incomplete, or without a valid CSRF token
        return render_template("identity/login.html", form=form), 400
    return render_template("identity/login.html", form=form)


@bp.errorhandler(TooManyRequests)
def sign_in_refused(exc: TooManyRequests) -> Response:
    """Too many sign-ins: the sign-in page again, saying why and when to come back."""
    page = render_template("identity/login.html", form=LoginForm(), refused=exc.description)
    out = current_app.make_response((page, 429))
    for name, value in exc.get_headers():
        if name == "Retry-After":
            out.headers[name] = value
    return out


def _sign_in(user: User) -> None:
    """A new server-side session for this browser (a fresh cookie: no fixation)."""
    flask_session.clear()
    flask_session[SESSION_KEY] = service.open_session(session(), user, max_age=session_max_age())
    login_user(user)


@bp.route("/logout", methods=["POST"])
def logout() -> Response:
    secret = flask_session.get(SESSION_KEY)
    if isinstance(secret, str):
        service.close_session(session(), secret)  # a copy of the cookie no longer signs in
    logout_user()
    flask_session.clear()
    return redirect(url_for("identity_pages.login"))


@bp.route("/account/password", methods=["GET", "POST"])
@login_required
def password() -> str | Response | tuple[str, int]:
    form = PasswordForm()
    if form.validate_on_submit():
        try:
            service.change_password(
                session(),
                caller(),
                form.current_password.data or "",
                form.new_password.data or "",
                min_length=setting("PASSWORD_MIN_LENGTH"),
            )
        except ValidationFailed as exc:
            for field, messages in exc.errors.items():
                getattr(form, field).errors = list(messages)
            return render_template("identity/password.html", form=form), 422
        except Forbidden as exc:  # the current password is wrong
            form.current_password.errors = [exc.message]
            return render_template("identity/password.html", form=form), 403
        _sign_in(caller())  # every session and token ended: this browser gets a new one
        flash(
            gettext("Password changed; your other sessions and your API tokens are ended."), "info"
        )
        return redirect(url_for("dashboard.index"))
    return render_template("identity/password.html", form=form)
