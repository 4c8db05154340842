"""Pages: the queue, job submission, a job's page (state and reason in words, log tail,
progress, resources, true times), cancel with a confirmation, and the history."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select
from werkzeug.wrappers import Response

from gres.hostlist import first_host
from portal.authz import Perm
from portal.errors import DomainError, Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext
from portal.jobs import history, monitor, service, words
from portal.jobs.chart import line_chart
from portal.jobs.forms import JobForm, jupyter_spec, spec_errors_on_fields
from portal.pages import show_error
from portal.quotas import words as quota_words
from portal.quotas.enforced import enforced
from portal.slurm import slurm
from portal.tenancy.models import Project
from portal.tenancy.service import projects_query
from portal.web import current_access, session
from slurm_plugins.client.errors import SlurmError

bp = Blueprint("jobs_pages", __name__)
PAGE = 50
#: the windows of the utilisation chart, in seconds
WINDOWS = (900, 3600, 21600, 86400)


@bp.route("/jobs")
@login_required
def index() -> str:
    filters: dict[str, Any] = {}
    if request.args.get("project_id", "").isdigit():
        filters["project_id"] = int(request.args["project_id"])
    page = max(1, request.args.get("page", 1, type=int) or 1)
    error = None
    jobs: Sequence[service.JobView] = []
    try:
        jobs = service.list_jobs(session(), current_access(), slurm(), filters)
    except DomainError as exc:
        error = exc.message
    pages = max(1, -(-len(jobs) // PAGE))
    shown = jobs[(page - 1) * PAGE : page * PAGE]
    return render_template(
        "jobs/index.html", jobs=shown, page=page, pages=pages, error=error, filters=filters
    )


@bp.route("/jobs/new", methods=["GET", "POST"])
@login_required
def submit() -> str | Response | tuple[str, int]:
    access = current_access()
    form = JobForm()
    form.kind.choices = [
        ("batch", gettext("Batch script")),
        ("jupyter", gettext("Jupyter (JupyterLab)")),
    ]
    projects = [
        p
        for p in session().scalars(projects_query(access))
        if Perm.JOBS_SUBMIT in access.on_project(p)
    ]
    form.project_id.choices = [(p.id, p.name) for p in projects]
    status = 200
    if form.validate_on_submit():
        data = {k: v for k, v in form.data.items() if k != "csrf_token" and v not in (None, "")}
        kind = data.pop("kind", "batch")
        data["script"] = data.get("script", "").replace("\r\n", "\n")
        try:
            if kind == "jupyter":
                spec = jupyter_spec(data)
                try:
                    job_id = service.submit_spec(
                        session(), access, slurm(), data["project_id"], spec
                    )
                except ValidationFailed as exc:  # the spec's refusals at the form's fields
                    raise ValidationFailed(spec_errors_on_fields(exc.errors, data)) from None
            else:
                if not data["script"].strip():
                    raise ValidationFailed({"script": [gettext("A batch job needs a script.")]})
                job_id = service.submit(session(), access, slurm(), data)
            flash(gettext("Job %(id)d submitted.", id=job_id), "info")
            return redirect(url_for(".detail", job_id=job_id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    elif form.is_submitted():
        status = 422
    limits = enforced(projects)
    return render_template(
        "jobs/submit.html", form=form, projects=projects, limits=limits, words=quota_words
    ), status


class _Page:
    """The page parameters :func:`page_of_query` fills in."""

    def __init__(self, page: int) -> None:
        self.page, self.page_size = page, PAGE
        self.item_count: int | None = None


@bp.route("/jobs/history")
@login_required
def history_index() -> str:
    page = _Page(max(1, min(request.args.get("page", 1, type=int) or 1, 2**31 // PAGE)))
    records = history.history_page(session(), current_access(), {}, page)
    pages = max(1, -(-(page.item_count or 0) // PAGE))
    shown = {r.project_id for r in records}
    named = select(Project.id, Project.name).where(Project.id.in_(shown))
    names = dict(session().execute(named).all())
    error = None
    try:
        found = slurm().jobs_by_id([r.job_id for r in records]) if records else []
    except SlurmError:
        found, error = [], gettext("Slurm did not answer: states and times are not shown.")
    return render_template(
        "jobs/history.html",
        rows=history.rows_with_jobs(records, found),
        names=names,
        page=page.page,
        pages=pages,
        error=error,
    )


def _per_card(view: service.JobView) -> int:
    """Shards per card of the job's node (its shards are counted against it)."""
    if not view.job.tres_req.shards and not view.job.tres_alloc.shards:
        return words.per_card_of([])
    try:
        nodes = slurm().nodes()
    except SlurmError:
        nodes = []
    first = first_host(view.job.nodes) if view.job.nodes else ""
    mine = [n for n in nodes if n.name == first] or nodes
    return words.per_card_of(mine)


@bp.route("/jobs/<id:job_id>")
@login_required
def detail(job_id: int) -> str:
    access = current_access()
    window = request.args.get("window", 3600, type=int) or 3600
    window = max(60, min(window, monitor.MAX_WINDOW_S))
    metrics = monitor.job_metrics(
        session(), access, slurm(), job_id, window_s=window, clock=time.time
    )
    view, job = metrics.view, metrics.view.job
    jupyter: dict[str, Any] | None = None
    if job.user == access.username and monitor.is_jupyter(view):
        conn = monitor.connection(session(), slurm(), view)
        # through the portal's proxy: users need no route to the compute node, nor the token
        url = url_for("jupyter_proxy.forward", job_id=job_id, path="lab") if conn else None
        jupyter = {"ready": conn is not None, "url": url}
    try:
        record = history.record_of(session(), access, job_id)
    except NotFound:
        record = None
    return render_template(
        "jobs/detail.html",
        view=view,
        job=job,
        times=words.times(job, datetime.now(UTC)),
        per_card=_per_card(view),
        policy=words.policy_reasons(job),
        chart=line_chart([(s.ts, s.util) for s in metrics.samples], y_max=100.0),
        window=window,
        windows=WINDOWS,
        jupyter=jupyter,
        output=monitor.output(session(), view, access),
        can_cancel=job.state.is_cancellable and service.may_cancel(session(), access, view),
        # another run of a job that ended: one still queued or running is not run again
        can_rerun=record is not None
        and record.user_id == access.user_id
        and not job.state.is_active,
        record=record,
    )


@bp.route("/jobs/<id:job_id>/rerun", methods=["POST"])
@login_required
def rerun(job_id: int) -> Response:
    try:
        new_id = history.rerun(session(), current_access(), slurm(), job_id)
    except DomainError as exc:
        if exc.status in {403, 404}:
            raise
        session().rollback()
        flash(exc.message, "error")
        return redirect(url_for(".detail", job_id=job_id))
    flash(gettext("Job %(old)d submitted again as job %(new)d.", old=job_id, new=new_id), "info")
    return redirect(url_for(".detail", job_id=new_id))


@bp.route("/jobs/<id:job_id>/cancel", methods=["GET", "POST"])
@login_required
def cancel(job_id: int) -> str | Response:
    """GET asks to confirm (no JavaScript needed); POST, with the form's CSRF token, cancels."""
    access = current_access()
    if request.method == "GET":
        view = service.get_job(session(), access, slurm(), job_id)
        if not view.job.state.is_cancellable:
            flash(gettext("Job %(id)d has already ended.", id=job_id), "info")
            return redirect(url_for(".detail", job_id=job_id))
        if not service.may_cancel(session(), access, view):
            raise Forbidden(
                gettext("Cancelling others' jobs needs the jobs.cancel_all permission.")
            )
        return render_template(
            "jobs/cancel.html",
            job=view.job,
            per_card=_per_card(view),
            times=words.times(view.job, datetime.now(UTC)),
        )
    try:
        service.cancel(session(), access, slurm(), job_id)
        flash(gettext("Job %(id)d cancelled.", id=job_id), "info")
    except DomainError as exc:
        if exc.status == 404:
            raise
        flash(exc.message, "error")
    return redirect(url_for(".detail", job_id=job_id))
