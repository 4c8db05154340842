"""The compute catalogue: each card model's figures per precision, and the measured scores."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The catalogue API and page."""
    from portal.catalogue.pages import bp as pages
    from portal.catalogue.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
