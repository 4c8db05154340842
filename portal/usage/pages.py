"""Usage pages: what the caller may see over a day, a week, a month or their own period, as a
chart over time and a table, drilling down from a domain to its projects, from a project to
its users and from a user to their jobs; with downloads and, for platform admins, an import
now. Billing and price plans are on the pages of :mod:`portal.usage.billing_pages` and
:mod:`portal.usage.plan_pages`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from werkzeug.wrappers import Response

from accounting import labels
from accounting.report import Dim
from portal.errors import DomainError, ValidationFailed
from portal.i18n import current, gettext, lazy_gettext
from portal.jobs import explain
from portal.slurm import slurm
from portal.usage import billing, charts, drill, service, windows
from portal.usage.blueprint import bp
from portal.usage.exports import zone
from portal.usage.schemas import DIMS, WindowQuerySchema
from portal.web import current_access, session
from slurm_plugins.client.models import JobState

#: the groups of the top page, and the level each one opens
GROUPS = {d.value: lazy_gettext(labels.DIMS[d]) for d in Dim}
OTHERS = lazy_gettext("Others")


def _span() -> windows.Span:
    query = WindowQuerySchema()
    errors = query.validate(request.args)
    if errors:
        raise ValidationFailed(errors)
    today = datetime.now(zone()).date()
    return windows.from_query(query.load(request.args), zone=zone(), today=today)


def _names(level: drill.Level, view: drill.View) -> list[str]:
    """What the chart's legend calls each group."""
    if level.by is None:
        return [level.user or ""]
    none = labels.label(current(), labels.NONE)
    names = [k or none for k in view.series.keys]
    return [*names, str(OTHERS)] if view.series.other is not None else names


def _link(level: drill.Level, key: str) -> str | None:
    """Where a row of a level's table drills down to (none where there is no deeper level)."""
    if not key:
        return None
    if level.by is Dim.DOMAIN:
        return url_for(".domain", name=key, **_kept())
    if level.by is Dim.PROJECT:
        return url_for(".project", name=key, **_kept())
    if level.by is Dim.USER and level.project:
        return url_for(".user", name=level.project, user=key, **_kept())
    return None


def _kept() -> dict[str, Any]:
    """The period of this page, for the links to the next level."""
    return {k: v for k, v in request.args.items() if k in ("window", "day", "first", "last")}


def _nearby(span: windows.Span, direction: int, extra: dict[str, Any]) -> str | None:
    """This page over the period before (-1) or after (+1) this one."""
    other = span.shifted(zone(), direction)
    if other is None:
        return None
    values: dict[str, Any] = {**(request.view_args or {}), **other.args(), **extra}
    return url_for(str(request.endpoint), **values)


def _page(level: drill.Level, template: str = "usage/level.html", **extra: Any) -> str:
    span = _span()
    access = current_access()
    view = drill.view(session(), access, level, (span.start, span.end), zone=zone(), port=slurm())
    names = _names(level, view)
    kept = {"by": level.by.value} if extra.get("groups_choice") and level.by else {}
    return render_template(
        template,
        level=level,
        view=view,
        rep=view.report,
        span=span,
        windows=windows.LABELS,
        earlier_url=_nearby(span, -1, kept),
        later_url=_nearby(span, 1, kept),
        chart=charts.stacked(view.series, names),
        chart_data=charts.data(view.series, names, str(zone())),
        links={ln.key: _link(level, ln.key) for ln in view.report.lines},
        groups=GROUPS,
        download={**span.api_args(), **level.args},
        state_of=lambda code: explain.state_words(JobState.parse(code), current()),
        **extra,
    )


@bp.route("/usage")
@login_required
def index() -> str:
    """Everything the caller may see, grouped as they choose (by project unless they say)."""
    asked = request.args.get("by") or ""
    by = Dim(asked if asked in DIMS else "project")
    access = current_access()
    return _page(
        drill.top(by),
        "usage/index.html",
        accounts=billing.accounts(session(), access),
        imports=service.import_status(session()),
        import_form=FlaskForm() if access.platform_admin else None,
        import_command="aipool accounting run",
        groups_choice=True,
    )


@bp.route("/usage/domains/<name:name>")
@login_required
def domain(name: str) -> str:
    """A domain's projects."""
    return _page(drill.domain(session(), current_access(), name))


@bp.route("/usage/projects/<name:name>")
@login_required
def project(name: str) -> str:
    """A project's users (a member who may not read others' jobs sees their own part)."""
    return _page(drill.project(session(), current_access(), name))


@bp.route("/usage/projects/<name:name>/users/<name:user>")
@login_required
def user(name: str, user: str) -> str:
    """A user's usage in a project, and the jobs behind it."""
    return _page(drill.user(session(), current_access(), name, user))


@bp.route("/usage/import", methods=["POST"])
@login_required
def import_now() -> Response:
    """Platform admins: import from sacct now instead of at the next scheduled import."""
    try:
        result = service.import_now(session(), current_access(), slurm())
        flash(
            gettext(
                "Imported %(seen)d jobs from sacct (%(written)d new or changed).",
                seen=result.seen,
                written=result.written,
            ),
            "info",
        )
    except DomainError as exc:
        if exc.status == 403:
            raise
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for(".index"))
