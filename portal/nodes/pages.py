"""Pages: the pool's capacity, each partition's and each node's, and charts over time."""

from __future__ import annotations

import time

from flask import Blueprint, render_template, request
from flask_login import login_required

from portal import clock
from portal.errors import SlurmUnavailable
from portal.nodes import energy, series
from portal.nodes.service import pool_of, read_nodes
from portal.slurm import slurm
from portal.web import session

bp = Blueprint("nodes_pages", __name__)


@bp.route("/nodes")
@login_required
def index() -> str:
    error = None
    try:
        nodes = read_nodes(slurm())
    except SlurmUnavailable as exc:
        nodes, error = [], exc.message
    return render_template(
        "nodes/index.html",
        pool=pool_of(nodes),
        error=error,
        energy=energy.energy_report(energy.DEFAULT_WINDOW, time.time()),
    )


@bp.route("/nodes/charts")
@login_required
def charts() -> str:
    """The pool's utilisation, cards in use and free per kind, the queue and waits per
    partition and each node's utilisation over a chosen window (the control daemon's
    samples; the page reads them, it never samples)."""
    window = request.args.get("window", series.DEFAULT_WINDOW)
    if window not in series.WINDOWS:
        window = series.DEFAULT_WINDOW
    data = series.read(session(), window, clock.now())
    return render_template(
        "nodes/charts.html",
        window=window,
        windows=series.WINDOWS,
        data=data,
        summary=series.summary(data),
    )
