"""The dashboard, the portal's home page."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The home page (no API: the dashboard reads the other packages' services)."""
    from portal.dashboard.pages import bp

    app.register_blueprint(bp)
