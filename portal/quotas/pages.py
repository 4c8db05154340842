"""Pages: quotas of domains and projects, and the Slurm sync for platform admins."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from werkzeug.wrappers import Response

from gres.naming import DEFAULT_SHARDS_PER_GPU
from portal.authz import Perm
from portal.errors import DomainError, ValidationFailed
from portal.i18n import gettext, ngettext
from portal.pages import refusal, show_error
from portal.quotas import policy, service, words
from portal.quotas.enforced import enforced
from portal.quotas.models import TRES
from portal.quotas.schemas import QuotaSchema
from portal.slurm import slurm
from portal.tenancy.models import Domain, Project
from portal.tenancy.service import domains_query, projects_query
from portal.web import check_version, current_access, locked, session, version_of

bp = Blueprint("quotas_pages", __name__)


def _limits_from_form() -> dict[str, Any]:
    """Empty means no limit; anything else must be a whole number ≥ 0."""
    out: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name in TRES:
        raw = request.form.get(name, "").strip()
        if not raw:
            out[name] = None
        elif raw.isdigit():
            out[name] = int(raw)
        else:
            errors[name] = [gettext("A whole number, 0 or more; empty for no limit.")]
    if errors:
        raise ValidationFailed(errors)
    return out


@bp.route("/quotas")
@login_required
def index() -> str:
    access = current_access()
    domains = list(session().scalars(domains_query(access)))
    projects = [
        p
        for p in session().scalars(projects_query(access))
        if Perm.QUOTA_READ in access.on_project(p)
    ]
    preview = admission = None
    if access.platform_admin and request.args.get("preview"):
        try:
            preview = service.sync(session(), access, slurm(), apply=False)
        except DomainError as exc:
            flash(exc.message, "error")
    if access.platform_admin and request.args.get("policy"):
        try:
            admission = policy.render_policy(session(), access, apply=False)
        except DomainError as exc:
            show_error(None, exc)
    versions = {
        f"{kind}-{row.id}": version_of(row.quota(), QuotaSchema)
        for kind, rows in (("domain", domains), ("project", projects))
        for row in rows
    }
    editable = {
        "domain": {d.id for d in domains} if access.platform_admin else set(),
        "project": {p.id for p in projects if Perm.QUOTA_MANAGE in access.on_project(p)},
    }
    applies = enforced(projects)
    seen = {p.name for p in session().scalars(projects_query(access))}  # lenders named
    given = {p: e.guarantee for p, e in applies.projects.items() if e.guarantee is not None}
    spg = applies.shards_per_gpu
    return render_template(
        "quotas/index.html",
        enforced=applies,
        guaranteed={p: words.guaranteed(g.nominal, spg) for p, g in given.items()},
        beyond={
            p: words.borrowing(
                g.borrowing_limit,
                [n for n in g.lenders if n in seen],
                sum(n not in seen for n in g.lenders),
                spg,
            )
            for p, g in given.items()
        },
        editable=editable,
        domains=domains,
        projects=projects,
        versions=versions,
        access=access,
        fields=list(TRES),
        headings={f: words.column_heading(f) for f in TRES},
        units={f: words.column_unit(f, DEFAULT_SHARDS_PER_GPU) for f in TRES},
        shards_per_card=DEFAULT_SHARDS_PER_GPU,
        preview=preview,
        admission=admission,
        summary=admission["summary"] if admission else None,
        Perm=Perm,
    )


def _saved(changes: int) -> str:
    return ngettext(
        "The quota is saved, and Slurm enforces it (%(num)d change sent).",
        "The quota is saved, and Slurm enforces it (%(num)d changes sent).",
        changes,
    )


@bp.route("/quotas/domains/<id:domain_id>", methods=["POST"])
@login_required
def set_domain(domain_id: int) -> Response:
    try:
        _check_version(Domain, domain_id)
        _, sent = service.save_and_enforce(
            session(), current_access(), slurm(), Domain, domain_id, _limits_from_form()
        )
        flash(_saved(len(sent["commands"])), "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
    return redirect(url_for(".index"))


def _check_version(owner: type[Domain] | type[Project], owner_id: int) -> None:
    """The limits the form was rendered with must still be the stored ones."""
    current = service.editable(session(), current_access(), owner, owner_id)
    check_version(
        request.form.get("version"),
        locked(current).quota(),
        QuotaSchema,
        message=gettext(
            "Someone else changed the quota of %(name)s since this page was shown, so your "
            "change was not saved. The page now shows the current limits; make your change "
            "again.",
            name=current.name,
        ),
    )


@bp.route("/quotas/projects/<id:project_id>", methods=["POST"])
@login_required
def set_project(project_id: int) -> Response:
    try:
        _check_version(Project, project_id)
        _, sent = service.save_and_enforce(
            session(), current_access(), slurm(), Project, project_id, _limits_from_form()
        )
        flash(_saved(len(sent["commands"])), "info")
    except DomainError as exc:
        session().rollback()
        flash(refusal(exc), "error")
    return redirect(url_for(".index"))


@bp.route("/quotas/sync", methods=["POST"])
@login_required
def apply_sync() -> Response:
    try:
        result = service.sync(session(), current_access(), slurm(), apply=True)
        flash(
            ngettext(
                "Slurm now matches the portal: %(num)d change sent.",
                "Slurm now matches the portal: %(num)d changes sent.",
                len(result["commands"]),
            ),
            "info",
        )
    except DomainError as exc:
        flash(exc.message, "error")
    return redirect(url_for(".index"))


@bp.route("/quotas/policy", methods=["POST"])
@login_required
def apply_policy() -> Response:
    try:
        result = policy.render_policy(session(), current_access(), apply=True)
        if result["changed"]:
            message = gettext(
                "The admission policy %(digest)s is installed: %(files)s written.",
                digest=result["digest"],
                files=", ".join(result["changed"]),
            )
        else:
            message = gettext(
                "The admission policy %(digest)s was installed already: nothing written.",
                digest=result["digest"],
            )
        flash(message, "info")
    except DomainError as exc:
        show_error(None, exc)
    return redirect(url_for(".index"))
