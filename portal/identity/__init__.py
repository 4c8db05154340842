"""Identity: users, sign-in, sessions, API tokens and passwords."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The users and tokens API, the sign-in pages and the users' admin pages."""
    from portal.identity.admin_pages import bp as admin_pages
    from portal.identity.pages import bp as pages
    from portal.identity.views import auth, users

    api.register_blueprint(auth)
    api.register_blueprint(users)
    app.register_blueprint(pages)
    app.register_blueprint(admin_pages)
