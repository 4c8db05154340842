"""Usage of compute (card-hours, CPU-hours) for the caller's tenants, from :mod:`accounting`."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The usage and billing API and pages."""
    from portal.usage.pages import bp as pages
    from portal.usage.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
