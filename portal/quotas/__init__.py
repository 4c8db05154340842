"""Quotas of domains and projects, enforced by Slurm, and the admission hook's policy."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The quotas API and page, ``flask render-policy``, and the page's words for amounts."""
    from portal.quotas import words
    from portal.quotas.pages import bp as pages
    from portal.quotas.policy import render_command
    from portal.quotas.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    app.cli.add_command(render_command)
    app.jinja_env.filters.update(cards=words.cards, minutes=words.minutes)
