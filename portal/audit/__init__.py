"""Audit: the log of every write, for those who administer what was written."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The audit log's API and page."""
    from portal.audit.pages import bp as pages
    from portal.audit.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
