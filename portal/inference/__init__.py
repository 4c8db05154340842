"""Inference services: a model version served over HTTP by Slurm jobs, proxied by the portal."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The inference API and pages, and ``flask inference``."""
    from portal.inference.cli import inference as command
    from portal.inference.pages import bp as pages
    from portal.inference.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    app.cli.add_command(command)
