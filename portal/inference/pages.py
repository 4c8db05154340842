"""Pages: inference services, their lifecycle (start, stop, scale, delete) and a "try it"
form that sends a prediction through the portal and shows the answer."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from werkzeug.wrappers import Response

from portal.authz import Perm
from portal.errors import DomainError, Forbidden, NotFound, ValidationFailed
from portal.i18n import gettext, translate_message
from portal.inference import service, trying, words
from portal.inference.models import InferenceService, ServiceState
from portal.registry import words as registry_words
from portal.registry.expiry import local_input, parse_local
from portal.tenancy.models import Project
from portal.web import current_access, session

bp = Blueprint("inference_pages", __name__)


@bp.context_processor
def _words() -> dict[str, Any]:
    return {"words": words, "registry_words": registry_words, "local_input": local_input}


@bp.route("/inference")
@login_required
def index() -> str:
    found = list(session().scalars(service.services_query(current_access(), {}).limit(500)))
    return render_template("inference/index.html", services=found)


def _may_manage(svc: InferenceService) -> bool:
    """What get_service(manage=True) lets through: the page offers only what will work."""
    access = current_access()
    if access.platform_admin or svc.owner_id == access.user_id:
        return True
    project = session().get(Project, svc.project_id)
    return project is not None and Perm.PROJECT_MANAGE in access.on_project(project)


def _page(svc: InferenceService, status: int = 200, **tried: Any) -> tuple[str, int]:
    fields = trying.fields_of(svc.version.input_schema or {})
    page = render_template(
        "inference/detail.html",
        svc=svc,
        url=service.service_url(svc),
        may_manage=_may_manage(svc),
        fields=fields,
        **{"form": {}, "errors": {}, "answer": None, "rows": [], "refusal": "", **tried},
    )
    return page, status


@bp.route("/inference/<id:service_id>")
@login_required
def detail(service_id: int) -> tuple[str, int]:
    return _page(service.get_service(session(), current_access(), service_id))


@bp.post("/inference/<id:service_id>/try")
@login_required
def try_it(service_id: int) -> tuple[str, int]:
    """One prediction from the form; the answer (or why there is none) on the same page."""
    svc = service.get_service(session(), current_access(), service_id)
    fields = trying.fields_of(svc.version.input_schema or {})
    form = {f.name: request.form.get(f.name, "") for f in fields}
    try:
        body = trying.body_of(fields, form, {f.name: _upload(f.name) for f in fields})
        status, payload = service.try_call(session(), current_access(), svc.id, body)
    except ValidationFailed as exc:
        session().rollback()
        return _page(svc, exc.status, form=form, errors=exc.errors)
    except DomainError as exc:  # stopped, expired, no replica ready yet
        session().rollback()
        return _page(svc, exc.status, form=form, refusal=exc.message)
    if status >= 400:
        # the replica's own refusal (its input checks), in the reader's language where known
        said = payload.get("message", "") if isinstance(payload, dict) else ""
        return _page(svc, status, form=form, refusal=translate_message(str(said)))
    rows = trying.answer_rows(body, payload)
    return _page(svc, form=form, answer=payload, rows=rows)


def _upload(name: str) -> Any:
    upload = request.files.get(name)
    return upload.stream if upload is not None and upload.filename else None


def _edit_form() -> dict[str, object]:
    """Allow-list (comma-separated) and expiry (site time; empty: none)."""
    raw = request.form.get("allow_ips", "").replace("，", ",")
    ips = [p.strip() for p in raw.split(",") if p.strip()]
    return {"allow_ips": ips, "expires_at": parse_local(request.form.get("expires_at", ""), "")}


@bp.post("/inference/<id:service_id>/<string:action>")
@login_required
def act(service_id: int, action: str) -> Response:
    access = current_access()
    try:
        if action == "start":
            service.set_state(session(), access, service_id, ServiceState.RUNNING)
            flash(gettext("Service started: its replicas start within seconds."), "info")
        elif action == "stop":
            service.set_state(session(), access, service_id, ServiceState.STOPPED)
            flash(gettext("Service stopped: its replicas stop within seconds."), "info")
        elif action == "scale":
            replicas = request.form.get("replicas", type=int)
            if replicas is None or not 0 <= replicas <= service.MAX_REPLICAS:
                message = gettext("From 0 to %(n)d replicas.", n=service.MAX_REPLICAS)
                raise ValidationFailed({"replicas": [message]})
            service.edit(session(), access, service_id, {"replicas": replicas})
            flash(gettext("Saved: %(n)d replicas wanted.", n=replicas), "info")
        elif action == "edit":
            service.edit(session(), access, service_id, _edit_form())
            flash(gettext("Saved."), "info")
        elif action == "delete":
            service.delete(session(), access, service_id)
            flash(gettext("Service deleted."), "info")
            return redirect(url_for(".index"))
        else:
            raise Forbidden(gettext("There is no such action."))
    except NotFound:
        raise  # not one's to see: the 404 page, not a message on a page one cannot open
    except DomainError as exc:
        session().rollback()
        flash(_sentence(exc), "error")
    return redirect(url_for(".detail", service_id=service_id))


def _sentence(exc: DomainError) -> str:
    """A refusal as one sentence: a field's messages without the field's internal name."""
    if not isinstance(exc, ValidationFailed):
        return exc.message
    said: list[str] = []
    for messages in exc.errors.values():
        said.extend(messages if isinstance(messages, list) else [str(messages)])
    return " ".join(said)
