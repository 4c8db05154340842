"""The site's branding (``SITE_NAME``, ``SITE_LOGO``, ``SITE_COLOURS``) and the navigation's
choices, for the layout every page extends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Response, abort, current_app, send_file
from flask_login import current_user

from portal.config import LOGO_TYPES
from portal.web import current_access


def logo() -> Response:
    """The site's logo file (``SITE_LOGO``), for everyone: the login page shows it."""
    path = current_app.config["SITE_LOGO"]
    if not path:
        abort(404)
    file = Path(path)
    return send_file(file, mimetype=LOGO_TYPES[file.suffix.lower()], max_age=3600)


def branding() -> dict[str, Any]:
    cfg = current_app.config
    site = {"name": cfg["SITE_NAME"], "logo": bool(cfg["SITE_LOGO"])}
    return {"site": {**site, "colours": cfg["SITE_COLOURS"]}}


def navigation() -> dict[str, Any]:
    if not getattr(current_user, "is_authenticated", False):
        return {"nav_domain_admin": False}
    return {"nav_domain_admin": bool(current_access().admin_of)}
