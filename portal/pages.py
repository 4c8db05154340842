"""Server-rendered pages: one blueprint per resource, registered here, and page helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, flash, send_file
from flask_login import current_user
from flask_wtf import FlaskForm

from portal.config import LOGO_TYPES
from portal.errors import DomainError, ValidationFailed


def show_error(form: FlaskForm | None, exc: DomainError) -> None:
    """Field errors onto the form's fields where they exist; everything else as a flash."""
    if isinstance(exc, ValidationFailed) and form is not None:
        rest = {}
        for name, messages in exc.errors.items():
            field = getattr(form, name, None)
            if field is not None and hasattr(field, "errors"):
                field.errors = list(messages) if isinstance(messages, list) else [str(messages)]
            else:
                rest[name] = messages
        if rest:
            flash("; ".join(f"{k}: {v}" for k, v in rest.items()), "error")
        return
    flash(exc.message, "error")


def register_pages(app: Flask) -> None:
    from portal.audit.pages import bp as audit
    from portal.dashboard.pages import bp as dashboard
    from portal.identity.pages import bp as identity
    from portal.jobs.pages import bp as jobs
    from portal.jobs.proxy import bp as jupyter_proxy
    from portal.nodes.pages import bp as nodes
    from portal.quotas.pages import bp as quotas
    from portal.tenancy.admin_pages import bp as tenancy_admin
    from portal.tenancy.pages import bp as tenancy

    blueprints = (identity, dashboard, tenancy, tenancy_admin, quotas, jobs, jupyter_proxy)
    for bp in (*blueprints, nodes, audit):
        app.register_blueprint(bp)

    @app.context_processor
    def branding() -> dict[str, Any]:
        cfg = app.config
        site = {"name": cfg["SITE_NAME"], "logo": bool(cfg["SITE_LOGO"])}
        return {"site": {**site, "colours": cfg["SITE_COLOURS"]}}

    @app.route("/branding/logo")
    def branding_logo() -> Response:
        """The site's logo file (``SITE_LOGO``), for everyone: the login page shows it."""
        logo = app.config["SITE_LOGO"]
        if not logo:
            abort(404)
        path = Path(logo)
        return send_file(path, mimetype=LOGO_TYPES[path.suffix.lower()], max_age=3600)

    @app.context_processor
    def navigation() -> dict[str, Any]:
        if not getattr(current_user, "is_authenticated", False):
            return {"nav_domain_admin": False}
        from portal.web import current_access

        return {"nav_domain_admin": bool(current_access().admin_of)}
