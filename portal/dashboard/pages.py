"""The dashboard: the pool's capacity (counted as every page counts it), the caller's projects
and their latest jobs."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask_login import login_required

from portal.clusters.placement import placement_line
from portal.errors import SlurmUnavailable
from portal.jobs.service import list_jobs
from portal.nodes.service import pool_of, read_nodes
from portal.slurm import slurm
from portal.tenancy.service import projects_query
from portal.web import current_access, session

bp = Blueprint("dashboard", __name__)


@bp.route("/")
@login_required
def index() -> str:
    access = current_access()
    projects = list(session().scalars(projects_query(access)))
    error = None
    try:
        nodes = read_nodes(slurm())
        jobs = list_jobs(session(), access, slurm(), {})[:10]
    except SlurmUnavailable as exc:
        nodes, jobs, error = [], [], exc.message
    return render_template(
        "dashboard/index.html",
        pool=pool_of(nodes),
        projects=projects,
        jobs=jobs,
        error=error,
        placement=placement_line(),
    )
