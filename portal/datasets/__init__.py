"""Datasets: immutable, checksummed versions from uploads, cluster paths and S3 stores."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The datasets API and pages; dataset directories follow the portal's permissions."""
    from portal.datasets import unix
    from portal.datasets.pages import bp as pages
    from portal.datasets.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    unix.install(app)
