"""Pages: models, a model with its versions, card, evaluations and actions; presets."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from markupsafe import Markup
from werkzeug.wrappers import Response

from portal.authz import Perm
from portal.errors import DomainError
from portal.inference import service as inference
from portal.presets.catalog import presets
from portal.registry import runs, service, sharing
from portal.registry.cards import render
from portal.slurm import slurm
from portal.tenancy.service import projects_query
from portal.web import current_access, session

bp = Blueprint("registry_pages", __name__)


def _submit_projects() -> list[Any]:
    access = current_access()
    return [
        p
        for p in session().scalars(projects_query(access))
        if Perm.JOBS_SUBMIT in access.on_project(p)
    ]


@bp.route("/models")
@login_required
def index() -> str:
    models = list(session().scalars(service.models_query(current_access(), {}).limit(500)))
    return render_template("registry/index.html", models=models)


@bp.route("/models/<id:model_id>")
@login_required
def detail(model_id: int) -> str:
    access = current_access()
    model, level = service.get_model(session(), access, model_id)
    versions = service.versions(session(), model)
    evaluations = runs.evaluations(session(), access, model_id, None)
    latest = versions[-1] if versions else None
    card = Markup(render(latest.card)) if latest else Markup("")  # noqa: S704 -- nh3-cleaned
    return render_template(
        "registry/detail.html",
        model=model,
        level=level.name.lower(),
        versions=versions,
        evaluations=evaluations,
        aliases=sharing.aliases(session(), model),
        card=card,
        latest=latest,
    )


def _act(model_id: int, action: Any, done: str) -> Response:
    try:
        action()
        flash(done, "info")
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for(".detail", model_id=model_id))


@bp.post("/models/<id:model_id>/versions/<id:number>/evaluate")
@login_required
def evaluate(model_id: int, number: int) -> Response:
    return _act(
        model_id,
        lambda: runs.evaluate(
            session(), current_access(), slurm(), model_id, number=number, data={}
        ),
        f"Evaluation of version {number} submitted.",
    )


@bp.post("/models/<id:model_id>/versions/<id:number>/fine-tune")
@login_required
def fine_tune(model_id: int, number: int) -> Response:
    return _act(
        model_id,
        lambda: runs.fine_tune(
            session(), current_access(), slurm(), model_id, number=number, data={}
        ),
        f"Fine-tuning from version {number} submitted.",
    )


@bp.post("/models/<id:model_id>/versions/<id:number>/deploy")
@login_required
def deploy(model_id: int, number: int) -> Response:
    access = current_access()
    try:
        version = service.get_version(session(), access, model_id, number)
        device = request.form.get("device", "cpu")
        svc, token = inference.create(
            session(), access, {"version_id": version.id, "device": device}
        )
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
        return redirect(url_for(".detail", model_id=model_id))
    flash(f"Deployed. The service token (shown once): {token}", "info")
    return redirect(url_for("inference_pages.detail", service_id=svc.id))


@bp.route("/presets")
@login_required
def preset_list() -> str:
    return render_template(
        "registry/presets.html", presets=list(presets().values()), projects=_submit_projects()
    )


@bp.post("/presets/<string:name>/import")
@login_required
def preset_import(name: str) -> Response:
    try:
        version = service.import_preset(
            session(),
            current_access(),
            {"preset": name, "project_id": request.form.get("project_id", type=int) or 0},
        )
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
        return redirect(url_for(".preset_list"))
    flash(f"Imported {name}.", "info")
    return redirect(url_for(".detail", model_id=version.model_id))
