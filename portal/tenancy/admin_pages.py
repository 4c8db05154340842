"""Pages for domain admins: domains with their projects and admins, user groups, their
members and the roles they hold on projects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select
from werkzeug.wrappers import Response

from portal.authz import Perm
from portal.errors import DomainError
from portal.i18n import gettext
from portal.pages import refusal
from portal.roles.models import Role
from portal.tenancy import groups, members, service
from portal.tenancy.models import Project
from portal.web import check_version, current_access, session, version_of

bp = Blueprint("tenancy_admin", __name__)


def _form(*names: str) -> dict[str, Any]:
    return {n: request.form.get(n, "").strip() for n in names}


def _run(done: Callable[[], str], call: Callable[..., Any], *args: Any) -> None:
    """Run a service write from a form; its refusal becomes a flash, never a half write.
    ``done`` says what happened, in the reader's language."""
    try:
        call(*args)
        flash(done(), "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")


def _int(value: str) -> int:
    return int(value) if value.isdigit() else 0


@bp.route("/domains")
@login_required
def domains() -> str:
    access = current_access()
    rows = []
    for d in session().scalars(service.domains_query(access)):
        manage = Perm.DOMAIN_MANAGE in access.on_domain(d.id)
        projects = list(session().scalars(service.projects_query(access, d.id)))
        admins = (
            list(session().scalars(members.admins_query(session(), access, d.id))) if manage else []
        )
        rows.append((d, projects, admins, manage))
    return render_template("tenancy/domains.html", rows=rows, access=access)


@bp.route("/domains/new", methods=["POST"])
@login_required
def new_domain() -> Response:
    data = _form("name", "description")
    _run(
        lambda: gettext("The domain %(name)s is created.", name=data["name"]),
        service.create_domain,
        session(),
        current_access(),
        data,
    )
    return redirect(url_for(".domains"))


@bp.route("/domains/<id:domain_id>/projects", methods=["POST"])
@login_required
def new_project(domain_id: int) -> Response:
    data = {**_form("name", "description", "qos"), "domain_id": domain_id}
    _run(
        lambda: gettext("The project %(name)s is created.", name=data["name"]),
        service.create_project,
        session(),
        current_access(),
        data,
    )
    return redirect(url_for(".domains"))


@bp.route("/domains/<id:domain_id>/admins", methods=["POST"])
@login_required
def new_admin(domain_id: int) -> Response:
    username = _form("username")["username"]
    _run(
        lambda: gettext("%(user)s is now an admin of the domain.", user=username),
        members.add_admin,
        session(),
        current_access(),
        domain_id,
        username,
    )
    return redirect(url_for(".domains"))


@bp.route("/domains/<id:domain_id>/admins/<id:user_id>/remove", methods=["POST"])
@login_required
def remove_admin(domain_id: int, user_id: int) -> Response:
    _run(
        lambda: gettext("The domain admin is removed."),
        members.remove_admin,
        session(),
        current_access(),
        domain_id,
        user_id,
    )
    return redirect(url_for(".domains"))


@bp.route("/groups")
@login_required
def group_list() -> str:
    access = current_access()
    rows = []
    for g in session().scalars(groups.groups_query(access)):
        grants = groups.group_grants(session(), access, g.id)
        versions = {gr.project_id: version_of(groups.grant_etag_data(gr)) for gr in grants}
        rows.append((g, groups.group_members(session(), access, g.id), grants, versions))
    domains = [
        d
        for d in session().scalars(service.domains_query(access))
        if Perm.DOMAIN_MANAGE in access.on_domain(d.id)
    ]
    projects = {p.id: p for p in session().scalars(select(Project).where(access.project_filter()))}
    roles = list(session().scalars(select(Role).order_by(Role.id)))
    return render_template(
        "tenancy/groups.html", rows=rows, domains=domains, projects=projects, roles=roles
    )


@bp.route("/groups/new", methods=["POST"])
@login_required
def new_group() -> Response:
    data = {**_form("name", "description"), "domain_id": _int(request.form.get("domain_id", ""))}
    _run(
        lambda: gettext("The user group %(name)s is created.", name=data["name"]),
        groups.create_group,
        session(),
        current_access(),
        data,
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/delete", methods=["POST"])
@login_required
def delete_group(group_id: int) -> Response:
    _run(
        lambda: gettext("The user group is deleted; its members lost the roles it held."),
        groups.delete_group,
        session(),
        current_access(),
        group_id,
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/members", methods=["POST"])
@login_required
def new_group_member(group_id: int) -> Response:
    username = _form("username")["username"]
    _run(
        lambda: gettext("%(user)s is added to the group.", user=username),
        groups.add_group_member,
        session(),
        current_access(),
        group_id,
        username,
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/members/<id:user_id>/remove", methods=["POST"])
@login_required
def remove_group_member(group_id: int, user_id: int) -> Response:
    _run(
        lambda: gettext("The user is removed from the group."),
        groups.remove_group_member,
        session(),
        current_access(),
        group_id,
        user_id,
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/grants", methods=["POST"])
@login_required
def new_grant(group_id: int) -> Response:
    f = _form("project_id", "role_id")
    _run(
        lambda: gettext("The group's role on the project is saved."),
        groups.grant,
        session(),
        current_access(),
        group_id,
        _int(f["project_id"]),
        _int(f["role_id"]),
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/grants/<id:project_id>/revoke", methods=["POST"])
@login_required
def revoke_grant(group_id: int, project_id: int) -> Response:
    """Take a group's role on a project back, unless it changed since the page was shown."""

    def revoke() -> None:
        row = groups.find_grant(session(), current_access(), group_id, project_id, lock=True)
        check_version(
            request.form.get("version"),
            groups.grant_etag_data(row),
            message=gettext(
                "Someone else changed this role of the group since the page was shown, so it "
                "was not taken back. The page now shows the current roles; do it again if "
                "you still mean to."
            ),
        )
        groups.revoke(session(), current_access(), group_id, project_id)

    _run(lambda: gettext("The group's role on the project is taken back."), revoke)
    return redirect(url_for(".group_list"))
