"""Page: the compute catalogue and the node kinds' scores."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, render_template
from flask_login import login_required

from gres.catalogue import Precision
from portal.catalogue.service import read_catalogue

bp = Blueprint("catalogue_pages", __name__)


@bp.route("/catalogue")
@login_required
def index() -> str:
    view = read_catalogue()
    scores = [(s, datetime.fromtimestamp(s.at, UTC)) for s in view.scores]
    return render_template(
        "catalogue/index.html", view=view, scores=scores, precisions=list(Precision)
    )
