"""API: datasets and their versions."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Blueprint

from portal.datasets import models  # noqa: F401  (the tables, for the migrations' metadata)
from portal.extensions import api

blp = Blueprint("datasets", __name__, url_prefix="/api/v1/datasets", description="Datasets")


def register(app: Flask) -> None:
    """The dataset and labelling APIs and pages (one call from the app factory)."""
    from portal.labelling.views import blp as labelling

    api.register_blueprint(blp)
    api.register_blueprint(labelling)
