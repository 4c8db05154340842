"""API: label sets, labelling tasks, annotations, review and export."""

from __future__ import annotations

from flask_smorest import Blueprint

from portal.labelling import models  # noqa: F401  (the tables, for the migrations' metadata)

blp = Blueprint("labelling", __name__, url_prefix="/api/v1/labelling", description="Labelling")
