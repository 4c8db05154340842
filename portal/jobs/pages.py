"""Pages: the queue, job submission, job detail and cancel."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response
from wtforms import IntegerField, SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length, NumberRange, Optional

from gres.naming import DEFAULT_SHARDS_PER_GPU
from portal.authz import Perm
from portal.errors import DomainError, NotFound, ValidationFailed
from portal.jobs import history, monitor, service
from portal.jobs.chart import line_chart
from portal.pages import show_error
from portal.slurm import slurm
from portal.tenancy.models import Project
from portal.tenancy.service import projects_query
from portal.web import current_access, session

bp = Blueprint("jobs_pages", __name__)
PAGE = 50
SCRIPT = "#!/bin/bash\nset -euo pipefail\nnvidia-smi || true\nsleep 60\n"


class JobForm(FlaskForm):
    kind = SelectField("Kind", default="batch")
    project_id = SelectField("Project", coerce=int)
    name = StringField("Name", validators=[DataRequired(), Length(max=64)])
    partition = StringField("Partition", validators=[Optional(), Length(max=32)])
    qos = StringField("QOS", validators=[Optional(), Length(max=32)])
    gpus = IntegerField("GPUs", validators=[Optional(), NumberRange(min=1, max=64)])
    shards = IntegerField("GPU shards (1/32 card)", validators=[Optional(), NumberRange(1, 2048)])
    npus = IntegerField("NPUs", validators=[Optional(), NumberRange(min=1, max=64)])
    gres_type = StringField("Device type (e.g. a100)", validators=[Optional(), Length(max=32)])
    cpus = IntegerField("CPUs per task", validators=[Optional(), NumberRange(min=1, max=4096)])
    time_limit = IntegerField(
        "Time limit (minutes)",
        default=60,
        validators=[DataRequired(), NumberRange(min=1, max=43200)],
    )
    script = TextAreaField("Batch script", default=SCRIPT, validators=[Optional()])


def jupyter_spec(data: dict[str, Any]) -> dict[str, Any]:
    """The form's fields as a Jupyter job spec (:mod:`jobspec`): JupyterLab from the job
    runtime, with the resources asked for; no conda environment needed."""
    resources: dict[str, Any] = {"time": int(data["time_limit"])}
    if data.get("gpus"):
        resources["gpus"] = int(data["gpus"])
    elif data.get("shards"):
        resources["gpus"] = f"{int(data['shards'])}/{DEFAULT_SHARDS_PER_GPU}"
    if data.get("npus"):
        resources["npus"] = int(data["npus"])
    if data.get("gres_type"):
        resources["npu_type" if data.get("npus") else "gpu_type"] = data["gres_type"]
    if data.get("cpus"):
        resources["cpus"] = int(data["cpus"])
    spec: dict[str, Any] = {"name": data["name"], "jupyter": {"app": "lab"}, "resources": resources}
    if data.get("partition"):
        spec["partition"] = data["partition"]
    return spec


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
    form.kind.choices = [("batch", "Batch script"), ("jupyter", "Jupyter (JupyterLab)")]
    form.project_id.choices = [
        (p.id, p.name)
        for p in session().scalars(projects_query(access))
        if Perm.JOBS_SUBMIT in access.on_project(p)
    ]
    status = 200
    if form.validate_on_submit():
        data = {k: v for k, v in form.data.items() if k != "csrf_token" and v not in (None, "")}
        kind = data.pop("kind", "batch")
        data["script"] = data.get("script", "").replace("\r\n", "\n")
        try:
            if kind == "jupyter":
                spec = jupyter_spec(data)
                job_id = service.submit_spec(session(), access, slurm(), data["project_id"], spec)
            else:
                if not data["script"].strip():
                    raise ValidationFailed({"script": ["a batch job needs a script"]})
                job_id = service.submit(session(), access, slurm(), data)
            flash(f"Submitted job {job_id}.", "info")
            return redirect(url_for(".detail", job_id=job_id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    elif form.is_submitted():
        status = 422
    return render_template("jobs/submit.html", form=form), status


class _Page:
    """The page parameters :func:`page_of_query` fills in."""

    def __init__(self, page: int) -> None:
        self.page, self.page_size = page, PAGE
        self.item_count: int | None = None


@bp.route("/jobs/history")
@login_required
def history_index() -> str:
    page = _Page(max(1, min(request.args.get("page", 1, type=int) or 1, 2**31 // PAGE)))
    rows = history.history_page(session(), current_access(), {}, page)
    pages = max(1, -(-(page.item_count or 0) // PAGE))
    shown = {r.project_id for r in rows}
    named = select(Project.id, Project.name).where(Project.id.in_(shown))
    names = dict(session().execute(named).all())
    return render_template("jobs/history.html", rows=rows, names=names, page=page.page, pages=pages)


@bp.route("/jobs/<id:job_id>")
@login_required
def detail(job_id: int) -> str:
    access = current_access()
    window = request.args.get("window", 3600, type=int) or 3600
    window = max(60, min(window, monitor.MAX_WINDOW_S))
    metrics = monitor.job_metrics(
        session(), access, slurm(), job_id, window_s=window, clock=time.time
    )
    job = metrics.view.job
    jupyter: dict[str, Any] | None = None
    if job.user == access.username and monitor.is_jupyter(metrics.view):
        conn = monitor.connection(metrics.view)
        # through the portal's proxy: users need no route to the compute node, nor the token
        url = url_for("jupyter_proxy.forward", job_id=job_id, path="lab") if conn else None
        jupyter = {"ready": conn is not None, "url": url}
    try:
        record = history.record_of(session(), access, job_id)
    except NotFound:
        record = None
    return render_template(
        "jobs/detail.html",
        view=metrics.view,
        job=job,
        chart=line_chart([(s.ts, s.util) for s in metrics.samples], y_max=100.0),
        window=window,
        jupyter=jupyter,
        output=monitor.output(metrics.view, access),
        can_rerun=record is not None and record.user_id == access.user_id,
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
    flash(f"Job {job_id} submitted again as job {new_id}.", "info")
    return redirect(url_for(".detail", job_id=new_id))


@bp.route("/jobs/<id:job_id>/cancel", methods=["POST"])
@login_required
def cancel(job_id: int) -> Response:
    try:
        service.cancel(session(), current_access(), slurm(), job_id)
        flash(f"Job {job_id} cancelled.", "info")
    except DomainError as exc:
        if exc.status == 404:
            raise
        flash(exc.message, "error")
    return redirect(url_for(".detail", job_id=job_id))
