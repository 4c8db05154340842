"""Labelling: annotate a dataset version's images, review, export to COCO, YOLO and VOC."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The labelling API and pages."""
    from portal.labelling.pages import bp as pages
    from portal.labelling.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
