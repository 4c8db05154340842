"""Pages: projects and their members."""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from portal.authz import Perm
from portal.errors import DomainError
from portal.pages import show_error
from portal.quotas import service as quotas
from portal.roles.models import Role
from portal.slurm import slurm
from portal.tenancy import members
from portal.tenancy.service import get_project, projects_query
from portal.web import current_access, session

bp = Blueprint("tenancy_pages", __name__)


class MemberForm(FlaskForm):
    username = StringField("User name", validators=[DataRequired(), Length(max=32)])
    role_id = SelectField("Role", coerce=int)


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
    form.role_id.choices = [(r.id, r.name) for r in session().scalars(select(Role))]
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
    page = render_template(
        "tenancy/project.html", project=proj, members=rows, perms=perms, form=form, Perm=Perm
    )
    return page, status


@bp.route("/projects/<id:project_id>/members/<id:user_id>/remove", methods=["POST"])
@login_required
def remove_member(project_id: int, user_id: int) -> Response:
    members.remove_member(session(), current_access(), project_id, user_id)
    return redirect(url_for(".project", project_id=project_id))
