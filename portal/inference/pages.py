"""Pages: inference services and their lifecycle (start, stop, scale, delete)."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from werkzeug.wrappers import Response

from portal.errors import DomainError, ValidationFailed
from portal.inference import service
from portal.inference.models import ServiceState
from portal.web import current_access, session

bp = Blueprint("inference_pages", __name__)


@bp.route("/inference")
@login_required
def index() -> str:
    found = list(session().scalars(service.services_query(current_access(), {}).limit(500)))
    return render_template("inference/index.html", services=found)


@bp.route("/inference/<id:service_id>")
@login_required
def detail(service_id: int) -> str:
    svc = service.get_service(session(), current_access(), service_id)
    return render_template("inference/detail.html", svc=svc, url=service.service_url(svc))


def _edit_form() -> dict[str, object]:
    """Allow-list (comma-separated) and expiry (``YYYY-MM-DDTHH:MM``, UTC; empty: none)."""
    ips = [p.strip() for p in request.form.get("allow_ips", "").split(",") if p.strip()]
    raw = request.form.get("expires_at", "").strip()
    try:
        expires = datetime.fromisoformat(raw).replace(tzinfo=UTC) if raw else None
    except ValueError:
        raise ValidationFailed(
            {"expires_at": ["a date and time, YYYY-MM-DDTHH:MM (UTC)"]}
        ) from None
    return {"allow_ips": ips, "expires_at": expires}


@bp.post("/inference/<id:service_id>/<string:action>")
@login_required
def act(service_id: int, action: str) -> Response:
    access = current_access()
    try:
        if action == "start":
            service.set_state(session(), access, service_id, ServiceState.RUNNING)
        elif action == "stop":
            service.set_state(session(), access, service_id, ServiceState.STOPPED)
        elif action == "scale":
            replicas = request.form.get("replicas", type=int)
            if replicas is None or not 0 <= replicas <= service.MAX_REPLICAS:
                raise ValidationFailed({"replicas": ["0-8"]})
            service.edit(session(), access, service_id, {"replicas": replicas})
        elif action == "edit":
            service.edit(session(), access, service_id, _edit_form())
        elif action == "delete":
            service.delete(session(), access, service_id)
            flash("Service deleted.", "info")
            return redirect(url_for(".index"))
        else:
            flash(f"unknown action {action}", "error")
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for(".detail", service_id=service_id))
