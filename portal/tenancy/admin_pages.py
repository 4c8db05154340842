"""Pages for domain admins: domains with their projects and admins, user groups and grants."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select
from werkzeug.wrappers import Response

from portal.authz import Perm
from portal.errors import DomainError
from portal.roles.models import Role
from portal.tenancy import groups, members, service
from portal.tenancy.models import Project
from portal.web import current_access, session

bp = Blueprint("tenancy_admin", __name__)


def _form(*names: str) -> dict[str, Any]:
    return {n: request.form.get(n, "").strip() for n in names}


def _run(action: str, call: Any, *args: Any) -> None:
    """Run a service write from a form; its refusal becomes a flash, never a half write."""
    try:
        call(*args)
        flash(f"{action}: done.", "info")
    except DomainError as exc:
        session().rollback()
        flash(f"{action}: {exc.message}", "error")


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
    _run(
        "New domain",
        service.create_domain,
        session(),
        current_access(),
        _form("name", "description"),
    )
    return redirect(url_for(".domains"))


@bp.route("/domains/<id:domain_id>/projects", methods=["POST"])
@login_required
def new_project(domain_id: int) -> Response:
    data = {**_form("name", "description", "qos"), "domain_id": domain_id}
    _run("New project", service.create_project, session(), current_access(), data)
    return redirect(url_for(".domains"))


@bp.route("/domains/<id:domain_id>/admins", methods=["POST"])
@login_required
def new_admin(domain_id: int) -> Response:
    _run(
        "New domain admin",
        members.add_admin,
        session(),
        current_access(),
        domain_id,
        _form("username")["username"],
    )
    return redirect(url_for(".domains"))


@bp.route("/groups")
@login_required
def group_list() -> str:
    access = current_access()
    rows = [
        (
            g,
            groups.group_members(session(), access, g.id),
            groups.group_grants(session(), access, g.id),
        )
        for g in session().scalars(groups.groups_query(access))
    ]
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
    _run("New group", groups.create_group, session(), current_access(), data)
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/members", methods=["POST"])
@login_required
def new_group_member(group_id: int) -> Response:
    _run(
        "Add to group",
        groups.add_group_member,
        session(),
        current_access(),
        group_id,
        _form("username")["username"],
    )
    return redirect(url_for(".group_list"))


@bp.route("/groups/<id:group_id>/grants", methods=["POST"])
@login_required
def new_grant(group_id: int) -> Response:
    f = _form("project_id", "role_id")
    _run(
        "Grant",
        groups.grant,
        session(),
        current_access(),
        group_id,
        _int(f["project_id"]),
        _int(f["role_id"]),
    )
    return redirect(url_for(".group_list"))
