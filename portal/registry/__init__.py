"""The model registry: registered models, versions, cards, sharing, artifacts, evaluations."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The model registry's API and pages."""
    from portal.registry.pages import bp as pages
    from portal.registry.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
