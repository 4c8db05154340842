"""Pages: the datasets one can read, a dataset's versions, upload, files and previews."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from portal.authz import Perm
from portal.datasets import service, sources
from portal.datasets.access import can
from portal.datasets.models import Visibility
from portal.datasets.preview import preview
from portal.datasets.schemas import DatasetUpdateSchema
from portal.datasets.service import Settings
from portal.datasets.storage import iter_files
from portal.errors import DomainError, NotFound, ValidationFailed
from portal.pages import show_error
from portal.tenancy.models import Project
from portal.web import current_access, session

bp = Blueprint("datasets_pages", __name__)
PAGE_FILES = 200


class DatasetForm(FlaskForm):
    project_id = SelectField("Project", coerce=int)
    name = StringField("Name", validators=[DataRequired(), Length(max=64)])
    description = StringField("Description", validators=[Length(max=255)])
    visibility = SelectField("Visibility", choices=[v.value for v in Visibility])


@bp.route("/datasets", methods=["GET", "POST"])
@login_required
def index() -> str | Response | tuple[str, int]:
    access = current_access()
    form = DatasetForm()
    projects = session().scalars(
        select(Project).where(access.project_filter()).order_by(Project.name)
    )
    form.project_id.choices = [
        (p.id, p.name) for p in projects if Perm.JOBS_SUBMIT in access.on_project(p)
    ]
    status = 200
    if form.validate_on_submit():
        try:
            ds = service.create_dataset(session(), access, form.data)
            return redirect(url_for(".detail", dataset_id=ds.id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    rows = list(session().scalars(service.datasets_query(access)))
    return render_template("datasets/index.html", datasets=rows, form=form), status


@bp.route("/datasets/<id:dataset_id>", methods=["GET", "POST"])
@login_required
def detail(dataset_id: int) -> str | Response | tuple[str, int]:
    access = current_access()
    ds = service.get_dataset(session(), access, dataset_id)
    form = FlaskForm()
    status = 200
    action = request.form.get("action", "upload")
    if form.validate_on_submit():
        try:
            if action == "settings":
                data = {k: request.form.get(k, "") for k in ("description", "visibility")}
                _check_settings(data)
                service.update_dataset(session(), access, ds.id, data)
                return redirect(url_for(".detail", dataset_id=ds.id))
            if action == "delete":
                service.delete_dataset(session(), access, Settings.current(), ds.id)
                flash(f"Dataset {ds.name} deleted.", "info")
                return redirect(url_for(".index"))
            # an empty file input still sends a part without a file name
            uploads = [(f.filename, f.stream) for f in request.files.getlist("files") if f.filename]
            fill = sources.upload(uploads, extract=bool(request.form.get("extract")))
            service.upload_version(
                session(),
                access,
                Settings.current(),
                ds.id,
                fill=fill,
                note=request.form.get("note", ""),
            )
            return redirect(url_for(".detail", dataset_id=ds.id))
        except DomainError as exc:
            session().rollback()
            show_error(None, exc)
            status = exc.status
    versions = list(session().scalars(service.versions_query(ds.id)))
    shown = _shown_version(versions)
    files: list[Any] = []
    if shown is not None:
        files = list(iter_files(service.manifest_of(Settings.current(), shown)))[:PAGE_FILES]
    page = render_template(
        "datasets/detail.html", ds=ds, versions=versions, shown=shown, files=files, form=form,
        may_write=can(access, ds)[1],
    )  # fmt: skip
    return page, status


def _check_settings(data: dict[str, str]) -> None:
    errors = DatasetUpdateSchema().validate(data)
    if errors:
        raise ValidationFailed(errors)


def _shown_version(versions: list[Any]) -> Any:
    wanted = request.args.get("version", type=int)
    for v in versions:
        if wanted is None or v.version == wanted:
            return v
    if wanted is not None:
        raise NotFound("version not found")
    return None


@bp.route("/datasets/<id:dataset_id>/v/<id:version>/preview/<path:path>")
@login_required
def file_preview(dataset_id: int, version: int, path: str) -> str:
    row = service.get_version(session(), current_access(), dataset_id, version)
    entry = service.manifest_of(Settings.current(), row).find(path)
    if entry is None:
        raise NotFound(f"no file {path!r} in version {version}")
    url = url_for("datasets.RawFile", dataset_id=dataset_id, version=version, path=path)
    info = preview(Path(row.path), entry, url)
    return render_template("datasets/preview.html", ds=row.dataset, v=row, info=info)
