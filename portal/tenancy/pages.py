"""Pages: projects and their members."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from portal.authz import Perm
from portal.errors import DomainError, Stale
from portal.i18n import gettext
from portal.i18n import lazy_gettext as _l
from portal.pages import refusal, show_error
from portal.quotas import service as quotas
from portal.roles.models import Role
from portal.roles.texts import role_name
from portal.slurm import slurm
from portal.tenancy import members
from portal.tenancy.service import get_project, projects_query
from portal.web import check_version, current_access, locked, session, version_of

bp = Blueprint("tenancy_pages", __name__)


class MemberForm(FlaskForm):
    username = StringField(_l("User name"), validators=[DataRequired(), Length(max=32)])
    role_id = SelectField(_l("Role"), coerce=int)


@bp.route("/projects")
@login_required
def projects() -> str:
    access = current_access()
    rows = list(session().scalars(projects_query(access)))
    return render_template("tenancy/projects.html", projects=rows, access=access)


@bp.route("/projects/<id:project_id>", methods=["GET", "POST"])
@login_required
def project(project_id: int) -> str | Response | tuple[str, int]:
    access = current_access()
    proj = get_project(session(), access, project_id, Perm.PROJECT_READ)
    perms = access.on_project(proj)
    form = MemberForm()
    roles = list(session().scalars(select(Role).order_by(Role.id)))
    form.role_id.choices = [(r.id, role_name(r)) for r in roles]
    status = 200
    if form.validate_on_submit():
        try:
            members.add_member(
                session(), access, proj.id, form.username.data or "", form.role_id.data or 0
            )
            quotas.enforce_project(session(), access, slurm(), proj.id)
            return redirect(url_for(".project", project_id=proj.id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    rows = (
        list(session().scalars(members.members_query(session(), access, proj.id)))
        if Perm.MEMBERS_READ in perms
        else []
    )
    versions = {m.id: version_of(members.member_etag_data(m)) for m in rows}
    page = render_template(
        "tenancy/project.html",
        project=proj,
        members=rows,
        versions=versions,
        perms=perms,
        form=form,
        roles=roles,
        Perm=Perm,
    )
    return page, status


@bp.route("/projects/<id:project_id>/members/<id:user_id>/remove", methods=["POST"])
@login_required
def remove_member(project_id: int, user_id: int) -> Response:
    """Remove a member, unless their membership changed since the page was shown."""
    access = current_access()
    member = members.get_member(session(), access, project_id, user_id, Perm.MEMBERS_MANAGE)
    try:
        check_version(
            request.form.get("version"),
            members.member_etag_data(locked(member)),
            message=gettext(
                "Someone else changed the membership of %(user)s since this page was shown, "
                "so it was not removed. The page now shows the current members; remove it "
                "again if you still mean to.",
                user=member.user.username,
            ),
        )
    except Stale as exc:
        session().rollback()
        flash(refusal(exc), "error")
    else:
        members.remove_member(session(), access, project_id, user_id)
        try:  # Slurm refuses their jobs in the project from now on
            quotas.enforce_project(session(), access, slurm(), project_id)
        except DomainError as exc:
            session().rollback()
            flash(refusal(exc), "error")
    return redirect(url_for(".project", project_id=project_id))


@bp.route("/projects/<id:project_id>/members/<id:user_id>/role", methods=["POST"])
@login_required
def change_role(project_id: int, user_id: int) -> Response:
    """Give a member another role, unless their membership changed since the page was shown;
    Slurm gets the change at once (a role may allow submitting or not)."""
    access = current_access()
    member = members.get_member(session(), access, project_id, user_id, Perm.MEMBERS_MANAGE)
    role_id = request.form.get("role_id", "")
    try:
        check_version(
            request.form.get("version"),
            members.member_etag_data(locked(member)),
            message=gettext(
                "Someone else changed the membership of %(user)s since this page was shown, "
                "so the role was not changed. The page now shows the current members; change "
                "it again if you still mean to.",
                user=member.user.username,
            ),
        )
        members.update_member(
            session(), access, project_id, user_id, int(role_id) if role_id.isdigit() else 0
        )
        quotas.enforce_project(session(), access, slurm(), project_id)
        flash(gettext("The role of %(user)s is changed.", user=member.user.username), "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
    return redirect(url_for(".project", project_id=project_id))
