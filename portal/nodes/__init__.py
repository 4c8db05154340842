"""Nodes: the clusters' nodes, their devices and their use."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The monitoring API, the nodes page and its charts, the words of node states."""
    from portal.nodes import words
    from portal.nodes.pages import bp as pages
    from portal.nodes.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    words.install(app)
