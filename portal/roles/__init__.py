"""Roles: the built-in project roles and custom ones made of grantable permissions."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The roles API."""
    from portal.roles.views import blp

    api.register_blueprint(blp)
