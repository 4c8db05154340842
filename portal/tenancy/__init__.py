"""Tenancy: domains, projects, their members and admins, user groups and their grants."""

from __future__ import annotations

from flask import Flask
from flask_smorest import Api


def register(app: Flask, api: Api) -> None:
    """The domains, projects and groups APIs, the projects' pages and the admins' pages."""
    from portal.tenancy.admin_pages import bp as admin_pages
    from portal.tenancy.group_views import blp as groups
    from portal.tenancy.pages import bp as pages
    from portal.tenancy.views import domains, projects
    from portal.tenancy.words import qos_list_words, qos_words

    api.register_blueprint(domains)
    api.register_blueprint(projects)
    api.register_blueprint(groups)
    app.register_blueprint(pages)
    app.register_blueprint(admin_pages)
    app.jinja_env.filters.update(qos_words=qos_words, qos_list_words=qos_list_words)
