"""Usage of compute (card-hours, CPU-hours) for the caller's tenants, from :mod:`accounting`."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The usage and billing API and pages."""
    # the drill-down, bills and price plans add their routes to the one blueprint
    from portal.usage import billing_pages, pages, plan_pages  # noqa: F401
    from portal.usage.blueprint import bp
    from portal.usage.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(bp)
