"""Alert rules and channels: the API and the page (the scheduler evaluates them,
:mod:`accounting.alert_eval`)."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    from portal.alerts.pages import bp as pages
    from portal.alerts.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
