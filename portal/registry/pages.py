"""Pages: models, a model with its versions, card, evaluations and actions; presets. The forms
that add versions and shares are in :mod:`portal.registry.forms`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import force_locale
from flask_login import login_required
from flask_wtf import FlaskForm
from markupsafe import Markup
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length

from portal.authz import Perm
from portal.datasets import words as data_words
from portal.errors import DomainError, NotFound, ValidationFailed
from portal.i18n import LOCALES, gettext
from portal.i18n import lazy_gettext as _l
from portal.inference import service as inference
from portal.inference import words as inference_words
from portal.inference.models import Device
from portal.pages import show_error
from portal.presets.catalog import Preset, presets
from portal.presets.catalog import get as get_preset
from portal.presets.texts import summary, title
from portal.registry import forms, reports, runs, service, sharing, storage, words
from portal.registry.access import Level
from portal.registry.cards import render
from portal.registry.expiry import end_of_day
from portal.registry.models import Evaluation, ModelVersion, Visibility
from portal.sharing import GranteeKind
from portal.slurm import slurm
from portal.tenancy.service import projects_query
from portal.web import current_access, session

bp = Blueprint("registry_pages", __name__)
METRICS = ("accuracy", "f1", "precision", "recall")  # the columns before any evaluation
# a per-class table reads P, R, F1 as classification reports do; counts last
PER_CLASS_ORDER = ["precision", "recall", "f1", *(m for m in words.METRICS if m not in METRICS)]


@bp.context_processor
def _words() -> dict[str, Any]:
    return {
        "words": words,
        "size": data_words.size,
        "metric_names": METRICS,
        "per_class_columns": lambda rows: reports.columns(rows, PER_CLASS_ORDER),
        "devices": [(d.value, inference_words.device(d.value)) for d in Device],
        "preset_title": title,
        "preset_summary": summary,
    }


class ModelForm(FlaskForm):
    project_id = SelectField(_l("Project"), coerce=int)
    name = StringField(_l("Name"), validators=[DataRequired(), Length(max=64)])
    task = SelectField(_l("Task"))
    framework = StringField(_l("Framework"), validators=[Length(max=64)])
    visibility = SelectField(_l("Visibility"))
    description = TextAreaField(_l("Description"), validators=[Length(max=1000)])


def _submit_projects() -> list[Any]:
    access = current_access()
    return [
        p
        for p in session().scalars(projects_query(access))
        if Perm.JOBS_SUBMIT in access.on_project(p)
    ]


@bp.route("/models", methods=["GET", "POST"])
@login_required
def index() -> tuple[str, int] | Response:
    form = ModelForm()
    form.project_id.choices = [(p.id, p.name) for p in _submit_projects()]
    form.task.choices = [("", gettext("Other"))] + [(k, words.task(k)) for k in words.TASK]
    form.visibility.choices = [
        (v.value, words.visibility(v.value, short=False)) for v in Visibility
    ]
    status = 200
    if form.validate_on_submit():
        try:
            model = service.create_model(session(), current_access(), form.data)
            session().commit()
            flash(gettext("Model %(name)s created: add its first version.", name=model.name))
            return redirect(url_for(".detail", model_id=model.id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    elif form.is_submitted():
        status = 422 if form.csrf_token.errors == [] else 400
    models = list(session().scalars(service.models_query(current_access(), {}).limit(500)))
    return render_template("registry/index.html", models=models, form=form), status


@bp.route("/models/<id:model_id>")
@login_required
def detail(model_id: int) -> tuple[str, int]:
    return detail_page(model_id)


def in_readers_language(
    preset_name: str | None, stored: str, write: Callable[[Preset], str]
) -> str:
    """A preset's card and description are written by AIPool at import, not by a person: shown
    in the reader's language while they are what the import wrote (in whichever language);
    text someone edited is shown as they wrote it."""
    preset = get_preset(preset_name) if preset_name else None
    if preset is None:
        return stored
    written = set()
    for locale in LOCALES:
        with force_locale(locale):
            written.add(write(preset))
    return write(preset) if stored in written else stored


def metric_names(versions: Sequence[ModelVersion], evaluations: Sequence[Evaluation]) -> list[str]:
    """The metric columns of a model's tables: those its evaluations report, whatever the task,
    in the vocabulary's order (classification's four before any)."""
    tables = [v.metrics for v in versions] + [e.metrics for e in evaluations]
    found = {
        k
        for metrics in tables
        for k, v in metrics.items()
        if k != "evaluation_id" and isinstance(v, (int, float))
    }
    return reports.ordered(found, list(words.METRICS)) if found else list(METRICS)


def detail_page(model_id: int, status: int = 200, **given: Any) -> tuple[str, int]:
    """The model's page; ``given`` are the forms as submitted (with their errors)."""
    access = current_access()
    model, level = service.get_model(session(), access, model_id)
    versions = service.versions(session(), model)
    evaluations = runs.evaluations(session(), access, model_id, None)
    latest = versions[-1] if versions else None
    text = in_readers_language(model.preset, latest.card, Preset.card) if latest else ""
    card = Markup(render(text)) if latest else Markup("")  # noqa: S704 -- nh3-cleaned
    shares = sharing.shares(session(), access, model_id) if level >= Level.ADMIN else []
    page = render_template(
        "registry/detail.html",
        model=model,
        description=in_readers_language(
            model.preset, model.description or "", lambda p: summary(p)[:1000]
        ),
        level=level.name.lower(),
        may_write=level >= Level.WRITE,
        may_admin=level >= Level.ADMIN,
        versions=versions,
        evaluations=evaluations,
        metric_names=metric_names(versions, [e for _, e in evaluations]),
        aliases=sharing.aliases(session(), model),
        card=card,
        latest=latest,
        shares=[(s, forms.grantee_name(s)) for s in shares],
        **forms.page_forms(given),
    )
    return page, status


def _act(model_id: int, action: Any, done: str) -> Response:
    try:
        action()
        flash(done, "info")
    except NotFound:
        raise  # another tenant's model: the 404 page
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
        gettext("Evaluation of version %(number)d submitted.", number=number),
    )


@bp.post("/models/<id:model_id>/versions/<id:number>/fine-tune")
@login_required
def fine_tune(model_id: int, number: int) -> Response:
    return _act(
        model_id,
        lambda: runs.fine_tune(
            session(), current_access(), slurm(), model_id, number=number, data={}
        ),
        gettext("Fine-tuning from version %(number)d submitted.", number=number),
    )


@bp.post("/models/<id:model_id>/versions/<id:number>/deploy")
@login_required
def deploy(model_id: int, number: int) -> Response:
    access = current_access()
    try:
        version = service.get_version(session(), access, model_id, number)
        device = request.form.get("device", Device.CPU.value)
        svc, token = inference.create(
            session(), access, {"version_id": version.id, "device": device}
        )
    except NotFound:
        raise
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
        return redirect(url_for(".detail", model_id=model_id))
    flash(
        gettext(
            "Deployed. The service token, shown only this once: %(token)s. Its replicas start "
            "within seconds.",
            token=token,
        ),
        "info",
    )
    return redirect(url_for("inference_pages.detail", service_id=svc.id))


def _weights(found: list[Preset]) -> dict[str, str]:
    """Where each preset's weights are: ``none`` needed (they ship with the installed
    packages), ``here`` in the site's mirror, or ``absent`` (a hub's, not mirrored yet)."""
    mirror = storage.mirror()
    return {
        p.name: "none" if not p.mirror else "here" if (mirror / p.mirror).is_dir() else "absent"
        for p in found
    }


@bp.route("/presets")
@login_required
def preset_list() -> str:
    """The presets, those a member can import now first (no hub weights, or mirrored); the
    others say so, with no action for members and the way to fill the mirror for admins."""
    weights = _weights(list(presets().values()))
    found = sorted(presets().values(), key=lambda p: weights[p.name] == "absent")
    return render_template(
        "registry/presets.html",
        presets=found,
        weights=weights,
        operator=current_access().platform_admin,
        projects=_submit_projects(),
    )


@bp.route("/presets/mirror")
@login_required
def preset_mirror() -> str:
    """For platform admins: the presets whose hub weights the site has not mirrored, their
    size and the command that fills the mirror (on a host that reaches the hub)."""
    current_access().require_platform_admin()
    found = list(presets().values())
    weights = _weights(found)
    missing = [p for p in found if weights[p.name] == "absent"]
    return render_template(
        "registry/mirror.html",
        missing=missing,
        here=[p for p in found if weights[p.name] == "here"],
        offline=[p for p in found if weights[p.name] == "none"],
        total_mb=sum(p.size_mb or 0 for p in missing),
        unknown=sum(p.size_mb is None for p in missing),
        mirror=str(storage.mirror()),
        command="aipool models mirror fill " + " ".join(p.name for p in missing),
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
    flash(gettext("Imported %(name)s.", name=name), "info")
    return redirect(url_for(".detail", model_id=version.model_id))


# ---------------------------------------------------------------------- forms
def _refused(model_id: int, form: FlaskForm, name: str, exc: DomainError) -> tuple[str, int]:
    """The model's page again, the refusal on the field it concerns (else as a message)."""
    session().rollback()
    if not isinstance(exc, ValidationFailed):
        show_error(form, exc)
        return detail_page(model_id, exc.status, **{name: form})
    for key, messages in exc.errors.items():
        field = getattr(form, _FIELDS.get(key, ""), None) or getattr(form, _MAIN[name])
        field.errors = [*field.errors, *(messages if isinstance(messages, list) else [messages])]
    return detail_page(model_id, exc.status, **{name: form})


# the services' names of what they checked, as the forms name those fields
_FIELDS = {"expires_at": "expires", "expires": "expires", "grantee_id": "grantee"}
_MAIN = {"upload_form": "file", "import_form": "path", "share_form": "grantee"}


@bp.post("/models/<id:model_id>/versions/upload")
@login_required
def upload(model_id: int) -> Response | tuple[str, int]:
    form = forms.UploadForm()
    if not form.validate_on_submit():
        return detail_page(model_id, 400 if form.csrf_token.errors else 422, upload_form=form)
    file = form.file.data
    try:
        version = service.upload_version(
            session(),
            current_access(),
            model_id,
            stream=file.stream,
            filename=file.filename or "",
            data={},
            port=slurm(),
        )
    except DomainError as exc:
        return _refused(model_id, form, "upload_form", exc)
    flash(gettext("Version %(number)d uploaded.", number=version.number), "info")
    return redirect(url_for("registry_pages.detail", model_id=model_id))


@bp.post("/models/<id:model_id>/versions/import")
@login_required
def import_version(model_id: int) -> Response | tuple[str, int]:
    form = forms.ImportForm()
    if not form.validate_on_submit():
        return detail_page(model_id, 400 if form.csrf_token.errors else 422, import_form=form)
    try:
        version = service.import_version(
            session(), current_access(), model_id, {"path": (form.path.data or "").strip()}
        )
    except DomainError as exc:
        return _refused(model_id, form, "import_form", exc)
    flash(
        gettext(
            "Version %(number)d imported (%(source)s).",
            number=version.number,
            source=words.source(version.source),
        ),
        "info",
    )
    return redirect(url_for("registry_pages.detail", model_id=model_id))


@bp.post("/models/<id:model_id>/shares")
@login_required
def share(model_id: int) -> Response | tuple[str, int]:
    form = forms.share_choices(forms.ShareForm())
    if not form.validate_on_submit():
        return detail_page(model_id, 400 if form.csrf_token.errors else 422, share_form=form)
    try:
        kind = GranteeKind(form.grantee_kind.data)
        grantee = forms.grantee_id(kind, (form.grantee.data or "").strip())
        day = form.expires.data.isoformat() if form.expires.data else ""
        data = {
            "grantee_kind": kind.value,
            "grantee_id": grantee,
            "mode": form.mode.data,
            "expires_at": end_of_day(day, "expires"),
        }
        sharing.share(session(), current_access(), model_id, data)
    except DomainError as exc:
        return _refused(model_id, form, "share_form", exc)
    flash(gettext("Shared with %(name)s.", name=form.grantee.data), "info")
    return redirect(url_for("registry_pages.detail", model_id=model_id) + "#shares")


@bp.post("/models/<id:model_id>/shares/<id:share_id>/delete")
@login_required
def unshare(model_id: int, share_id: int) -> Response:
    try:
        sharing.unshare(session(), current_access(), model_id, share_id)
        flash(gettext("The share was withdrawn."), "info")
    except NotFound:
        raise
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for("registry_pages.detail", model_id=model_id) + "#shares")
