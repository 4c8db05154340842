"""The site's branding (``SITE_NAME``, ``SITE_LOGO``, ``SITE_COLOURS``) and the navigation's
choices, for the layout every page extends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Response, abort, current_app, redirect, request, send_file, url_for
from flask_login import current_user
from werkzeug.wrappers import Response as BaseResponse

from portal.config import LOGO_TYPES
from portal.extensions import csrf
from portal.i18n import COOKIE, LOCALES, gettext
from portal.identity.models import User
from portal.web import current_access, session


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


def choose_language() -> BaseResponse:
    """The header's language switcher: saved on the signed-in user, and in a cookie for a
    visitor; back to the page it was used on."""
    csrf.protect()  # a visitor's switch too (signed-in writes are checked for every view)
    chosen = request.form.get("language", "")
    back = _local(request.form.get("next"))
    if chosen not in LOCALES:
        abort(400, description=gettext("Choose one of the languages offered."))
    if getattr(current_user, "is_authenticated", False):
        user = session().get(User, current_user.id)
        if user is not None and user.language != chosen:
            user.language = chosen
            session().commit()
    out = redirect(back)
    out.set_cookie(COOKIE, chosen, max_age=365 * 86400, samesite="Lax", httponly=True)
    return out


def _local(target: str | None) -> str:
    """Only a path on this site (never another site's address)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return url_for("dashboard.index")
    return target


def favicon() -> Response:
    """``/favicon.ico``: the site's logo where it has one, else AIPool's icon."""
    path = current_app.config["SITE_LOGO"]
    if path:
        file = Path(path)
        return send_file(file, mimetype=LOGO_TYPES[file.suffix.lower()], max_age=86400)
    icon = Path(current_app.static_folder or "", "favicon.ico")
    return send_file(icon, mimetype="image/vnd.microsoft.icon", max_age=86400)
