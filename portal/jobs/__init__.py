"""Jobs: submission as the user, queues, history, monitoring and the Jupyter proxy."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The jobs API, the jobs' pages and the Jupyter proxy; the words the pages show of a
    job (state, reason, resources) as template globals."""
    from portal.jobs import words
    from portal.jobs.pages import bp as pages
    from portal.jobs.proxy import bp as jupyter_proxy
    from portal.jobs.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    app.register_blueprint(jupyter_proxy)
    words.install(app)
