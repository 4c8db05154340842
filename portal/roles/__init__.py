"""Roles: the built-in project roles and custom ones made of grantable permissions."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The roles API and pages, and the filters that show roles and permissions in words."""
    from portal.roles.pages import bp as pages
    from portal.roles.texts import permission_text, role_description, role_name
    from portal.roles.views import blp

    api.register_blueprint(blp)
    app.register_blueprint(pages)
    app.jinja_env.filters.update(
        role_name=role_name, role_description=role_description, permission_text=permission_text
    )
