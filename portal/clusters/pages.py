"""Pages: every cluster, its nodes, capacity and queue."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask_login import login_required

from portal.clusters.service import read_clusters, require_admin
from portal.errors import SlurmUnavailable
from portal.slurm import slurm
from portal.web import current_access

bp = Blueprint("clusters_pages", __name__)


@bp.route("/clusters")
@login_required
def index() -> str:
    access = current_access()
    require_admin(access)
    error = None
    try:
        clusters = read_clusters(slurm(), access)
    except SlurmUnavailable as exc:
        clusters, error = [], exc.message
    return render_template("clusters/index.html", clusters=clusters, error=error)
