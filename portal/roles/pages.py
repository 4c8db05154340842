"""Pages: project roles as sets of permissions. Everyone who administers tenants reads them
(domain admins give them to members and groups); platform admins make, change and delete the
custom ones. Built-in roles are read-only."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response
from wtforms import SelectMultipleField, StringField
from wtforms.validators import DataRequired, Length

from portal.authz import Access
from portal.errors import DomainError, Forbidden, Stale
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.pages import refusal, show_error
from portal.roles import service
from portal.roles.models import Role
from portal.roles.schemas import RoleSchema
from portal.roles.texts import grantable, role_name
from portal.web import check_version, current_access, locked, session, version_of

bp = Blueprint("roles_pages", __name__)


class RoleForm(FlaskForm):
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64)])
    description = StringField(_l("Description"), validators=[Length(max=255)])
    permissions = SelectMultipleField(_l("Permissions"))


def _form(role: Role | None = None) -> RoleForm:
    form = RoleForm(obj=role)
    form.permissions.choices = grantable()
    return form


def _readers(access: Access) -> None:
    if not access.platform_admin and not access.admin_of:
        raise Forbidden(gettext("Roles are for platform admins and domain admins."))


@bp.route("/roles")
@login_required
def index() -> str:
    access = current_access()
    _readers(access)
    roles = list(session().scalars(service.roles_query()))
    return render_template("roles/index.html", roles=roles, access=access, permissions=grantable())


@bp.route("/roles/new", methods=["GET", "POST"])
@login_required
def new() -> str | Response | tuple[str, int]:
    access = current_access()
    access.require_platform_admin()
    form = _form()
    status = 200
    if form.validate_on_submit():
        data = {
            "name": (form.name.data or "").strip(),
            "description": (form.description.data or "").strip(),
            "permissions": list(form.permissions.data or []),
        }
        try:
            role = service.create_role(session(), access, data)
            flash(gettext("The role %(name)s is created.", name=role.name), "info")
            return redirect(url_for(".index"))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    elif form.is_submitted():
        status = 422
    page = render_template("roles/edit.html", form=form, role=None, editable=True, version=None)
    return page, status


@bp.route("/roles/<id:role_id>", methods=["GET", "POST"])
@login_required
def edit(role_id: int) -> str | Response | tuple[str, int]:
    access = current_access()
    _readers(access)
    role = service.get_role(session(), role_id)
    form = _form(role)
    status = 200
    if request.method == "POST":
        current = service.editable_role(session(), access, role_id)  # platform admins only
        if form.validate_on_submit():
            try:
                _check(current)
                data = {
                    "name": (form.name.data or "").strip(),
                    "description": (form.description.data or "").strip(),
                    "permissions": list(form.permissions.data or []),
                }
                service.update_role(session(), access, role_id, data)
                flash(gettext("The role %(name)s is saved.", name=data["name"]), "info")
                return redirect(url_for(".index"))
            except Stale as exc:  # the page again, showing the role as it is now
                session().rollback()
                flash(refusal(exc), "error")
                return redirect(url_for(".edit", role_id=role_id))
            except DomainError as exc:
                session().rollback()
                show_error(form, exc)
                status = exc.status
                role = service.get_role(session(), role_id)
        else:
            status = 422
    return render_template(
        "roles/edit.html",
        form=form,
        role=role,
        editable=access.platform_admin and not role.builtin,
        version=version_of(role, RoleSchema),
    ), status


def _check(role: Role) -> None:
    check_version(
        request.form.get("version"),
        locked(role),
        RoleSchema,
        message=gettext(
            "Someone else changed the role %(name)s since this page was shown, so your change "
            "was not saved. The page now shows the role as it is; make your change again.",
            name=role_name(role),
        ),
    )


@bp.route("/roles/<id:role_id>/delete", methods=["POST"])
@login_required
def delete(role_id: int) -> Response:
    access = current_access()
    role = service.editable_role(session(), access, role_id)
    name = role.name
    try:
        _check(role)
        service.delete_role(session(), access, role_id)
        flash(gettext("The role %(name)s is deleted.", name=name), "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
    return redirect(url_for(".index"))
