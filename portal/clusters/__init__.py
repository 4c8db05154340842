"""Clusters: every Slurm cluster slurmdbd knows, with its state."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The clusters API and page."""
    from portal.clusters.pages import bp as pages
    from portal.clusters.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
