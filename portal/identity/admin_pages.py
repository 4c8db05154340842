"""Pages: users, for platform admins and, within their domains, domain admins (list and
search, create, reset a password, deactivate and reactivate, edit, memberships and roles).

A generated password is shown once, on the page that answers the create or the reset, and
never stored or sent anywhere else: the portal needs no mail server for it, and an invite link
would be one more secret in transit that signs someone in. The answer is marked ``no-store``
so that the browser keeps no copy of it.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, make_response, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from marshmallow import ValidationError
from marshmallow.validate import Email
from werkzeug.wrappers import Response
from wtforms import BooleanField, PasswordField, SelectField, StringField
from wtforms import ValidationError as FormError
from wtforms.validators import DataRequired, Length, Optional

from portal.errors import DomainError, Forbidden, Stale
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.identity import admin, service
from portal.identity.models import User
from portal.pages import refusal, show_error
from portal.pagination import page_of_query
from portal.quotas import service as quotas
from portal.roles.service import roles_query
from portal.roles.texts import role_name
from portal.slurm import slurm
from portal.tenancy.service import domains_query
from portal.web import check_version, current_access, locked, session, setting, version_of

bp = Blueprint("users_pages", __name__)
PAGE = 50


def _email(_form: FlaskForm, field: Any) -> None:
    if field.data:
        try:
            Email()(field.data)
        except ValidationError:
            raise FormError(gettext("Not a valid email address.")) from None


class NewUserForm(FlaskForm):
    username = StringField(
        _l("User name"),
        validators=[DataRequired(), Length(max=32)],
        description=_l("Also the user's name on the cluster's computers and in Slurm."),
    )
    display_name = StringField(_l("Full name"), validators=[Optional(), Length(max=120)])
    email = StringField(_l("E-mail"), validators=[Optional(), Length(max=254), _email])
    password = PasswordField(
        _l("Password"),
        validators=[Optional(), Length(max=1024)],
        description=_l("Leave it empty to generate one: it is shown once, on the next page."),
    )
    project_id = SelectField(_l("Project"), coerce=int)
    role_id = SelectField(_l("Role in the project"), coerce=int)
    is_platform_admin = BooleanField(_l("Platform admin (may do everything)"))


class EditUserForm(FlaskForm):
    display_name = StringField(_l("Full name"), validators=[Optional(), Length(max=120)])
    email = StringField(_l("E-mail"), validators=[Optional(), Length(max=254), _email])


class _Page:
    def __init__(self, page: int, page_size: int) -> None:
        self.page, self.page_size = page, page_size
        self.item_count: int | None = None


def _admins_only() -> None:
    access = current_access()
    if not access.platform_admin and not access.admin_of:
        raise Forbidden(gettext("Only platform admins and domain admins manage users."))


def _shown_once(template: str, status: int = 200, **context: Any) -> Response:
    """A page that shows a password: no copy in the browser's cache or history."""
    out = make_response(render_template(template, **context), status)
    out.headers["Cache-Control"] = "no-store"
    return out


@bp.route("/users")
@login_required
def index() -> str:
    _admins_only()
    q = request.args.get("q", "").strip()[:120]
    params = _Page(max(1, request.args.get("page", 1, type=int) or 1), PAGE)
    rows = page_of_query(session(), service.users_query(current_access(), q or None), params)
    pages = max(1, -(-(params.item_count or 0) // PAGE))
    return render_template(
        "identity/users.html",
        domains=_domain_names(),
        users=rows,
        q=q,
        page=params.page,
        pages=pages,
        total=params.item_count or 0,
    )


@bp.route("/users/new", methods=["GET", "POST"])
@login_required
def new() -> str | Response | tuple[str, int]:
    _admins_only()
    access = current_access()
    form = NewUserForm()
    projects = admin.creatable_in(session(), access)
    none = [(0, gettext("No project yet"))] if access.platform_admin else []
    form.project_id.choices = none + [(p.id, p.name) for p in projects]
    roles = session().scalars(roles_query())
    form.role_id.choices = [(r.id, role_name(r)) for r in roles]
    if not access.platform_admin:
        del form.is_platform_admin  # domain admins never make platform admins
    status = 200
    if form.validate_on_submit():
        data = {
            name: getattr(form, name).data
            for name in ("username", "display_name", "email", "password", "project_id", "role_id")
        }
        data["username"] = (data["username"] or "").strip()
        data["is_platform_admin"] = bool(access.platform_admin and form.is_platform_admin.data)
        try:
            user, password, project = admin.create_user(
                session(), access, data, min_length=setting("PASSWORD_MIN_LENGTH")
            )
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
        else:
            _enforce(project.id if project else None)
            shown = None if data["password"] else password
            return _shown_once("identity/user_created.html", user=user, password=shown)
    elif form.is_submitted():
        status = 422
    return render_template("identity/user_new.html", form=form, projects=projects), status


def _enforce(project_id: int | None) -> None:
    """The new member's Slurm association at once, as for any member added; a refusal is said
    (the user exists either way, and the next sync adds the association)."""
    if project_id is None:
        return
    try:
        quotas.enforce_project(session(), current_access(), slurm(), project_id)
    except DomainError as exc:
        session().rollback()
        flash(
            gettext(
                "The user is created, but Slurm did not take their membership yet: %(why)s",
                why=exc.message,
            ),
            "error",
        )


def _domain_names() -> dict[int, str]:
    """The domains the caller may see, by id (another domain's name is not shown)."""
    return {d.id: d.name for d in session().scalars(domains_query(current_access()))}


def _version(user: User) -> str:
    return version_of(user.audit_view())


@bp.route("/users/<id:user_id>", methods=["GET", "POST"])
@login_required
def detail(user_id: int) -> str | Response | tuple[str, int]:
    _admins_only()
    access = current_access()
    user = service.get_user(session(), access, user_id)
    form = EditUserForm(obj=user)
    status = 200
    if request.method == "POST":
        admin.manageable(session(), access, user_id)
        if form.validate_on_submit():
            try:
                _check(user)
                changes = {
                    "display_name": (form.display_name.data or "").strip(),
                    "email": (form.email.data or "").strip(),
                }
                admin.update_user(session(), access, user_id, changes)
                flash(gettext("The account of %(name)s is saved.", name=user.username), "info")
                return redirect(url_for(".detail", user_id=user_id))
            except Stale as exc:
                session().rollback()
                flash(refusal(exc), "error")
                return redirect(url_for(".detail", user_id=user_id))
            except DomainError as exc:
                session().rollback()
                show_error(form, exc)
                status = exc.status
        else:
            status = 422
    ties = admin.ties_of(session(), access, user)
    page = render_template(
        "identity/user.html",
        user=user,
        ties=ties,
        form=form,
        version=_version(user),
        domains=_domain_names(),
    )
    return page, status


def _check(user: User) -> None:
    check_version(
        request.form.get("version"),
        locked(user).audit_view(),
        message=gettext(
            "Someone else changed the account of %(name)s since this page was shown, so your "
            "change was not made. The page now shows the account as it is; do it again if you "
            "still mean to.",
            name=user.username,
        ),
    )


@bp.route("/users/<id:user_id>/password", methods=["POST"])
@login_required
def reset(user_id: int) -> Response:
    _admins_only()
    access = current_access()
    user = admin.manageable(session(), access, user_id)
    try:
        password = admin.reset_password(
            session(), access, user_id, None, min_length=setting("PASSWORD_MIN_LENGTH")
        )
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
        return redirect(url_for(".detail", user_id=user_id))
    return _shown_once("identity/password_reset.html", user=user, password=password)


@bp.route("/users/<id:user_id>/active", methods=["POST"])
@login_required
def set_active(user_id: int) -> Response:
    _admins_only()
    access = current_access()
    user = admin.manageable(session(), access, user_id)
    active = request.form.get("active") == "1"
    try:
        _check(user)
        admin.update_user(session(), access, user_id, {"active": active})
        message = (
            gettext("%(name)s may sign in again.", name=user.username)
            if active
            else gettext(
                "%(name)s is deactivated: their sessions and API tokens are ended.",
                name=user.username,
            )
        )
        flash(message, "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
    return redirect(url_for(".detail", user_id=user_id))
