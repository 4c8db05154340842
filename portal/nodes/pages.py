"""Pages: nodes and their use."""

from __future__ import annotations

from flask import Blueprint, render_template
from flask_login import login_required

from portal.errors import SlurmUnavailable
from portal.nodes.service import node_usage, read_nodes, totals
from portal.slurm import slurm

bp = Blueprint("nodes_pages", __name__)


@bp.route("/nodes")
@login_required
def index() -> str:
    error = None
    try:
        nodes = read_nodes(slurm())
    except SlurmUnavailable as exc:
        nodes, error = [], exc.message
    rows = [(n, node_usage(n)) for n in nodes]
    return render_template("nodes/index.html", rows=rows, totals=totals(nodes), error=error)
