"""Registration of the registry's and inference services' API and pages."""

from __future__ import annotations

from flask import Flask


def register(app: Flask) -> None:
    from portal.extensions import api
    from portal.inference.cli import inference as inference_cli
    from portal.inference.pages import bp as inference_pages
    from portal.inference.views import blp as inference
    from portal.registry.pages import bp as registry_pages
    from portal.registry.views import blp as models

    api.register_blueprint(models)
    api.register_blueprint(inference)
    app.register_blueprint(registry_pages)
    app.register_blueprint(inference_pages)
    app.cli.add_command(inference_cli)
