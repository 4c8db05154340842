"""Pages: the datasets one can read; a dataset's versions, its files and previews; for its
writers, new versions (uploaded, or from a cluster directory or an object store), settings,
shares and deletion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from flask_wtf import FlaskForm
from sqlalchemy import select
from werkzeug.wrappers import Response

from portal.authz import Perm
from portal.datasets import forms, service, shares, sources, words
from portal.datasets.access import can
from portal.datasets.preview import preview
from portal.datasets.schemas import DatasetUpdateSchema, NewVersionSchema
from portal.datasets.service import Settings
from portal.datasets.storage import iter_files
from portal.errors import DomainError, NotFound, ValidationFailed
from portal.i18n import gettext, translate_messages
from portal.pages import show_error
from portal.registry.expiry import end_of_day
from portal.tenancy.models import Project
from portal.web import current_access, session

bp = Blueprint("datasets_pages", __name__)
PAGE_FILES = 200


@bp.context_processor
def _words() -> dict[str, Any]:
    return {"words": words}


@bp.route("/datasets", methods=["GET", "POST"])
@login_required
def index() -> str | Response | tuple[str, int]:
    access = current_access()
    form = forms.DatasetForm()
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
            flash(gettext("Dataset %(name)s created: add its first version.", name=ds.name))
            return redirect(url_for(".detail", dataset_id=ds.id))
        except DomainError as exc:
            session().rollback()
            show_error(form, exc)
            status = exc.status
    elif form.is_submitted():
        status = 400 if form.csrf_token.errors else 422
    rows = list(session().scalars(service.datasets_query(access)))
    return render_template("datasets/index.html", datasets=rows, form=form), status


@bp.route("/datasets/<id:dataset_id>", methods=["GET", "POST"])
@login_required
def detail(dataset_id: int) -> Response | tuple[str, int]:
    """The page; its POST is the upload form, or the settings or deletion (``action``)."""
    if request.method == "GET":
        return detail_page(dataset_id)
    action = request.form.get("action", "upload")
    if action == "settings":
        return _settings(dataset_id)
    if action == "delete":
        return _delete(dataset_id)
    return _upload(dataset_id)


def detail_page(dataset_id: int, status: int = 200, **given: Any) -> tuple[str, int]:
    access = current_access()
    ds = service.get_dataset(session(), access, dataset_id)
    versions = list(session().scalars(service.versions_query(ds.id)))
    shown = _shown_version(versions)
    files: list[Any] = []
    if shown is not None:
        files = list(iter_files(service.manifest_of(Settings.current(), shown)))[:PAGE_FILES]
    may_write = can(access, ds)[1]
    rows = shares.shares(session(), access, ds.id) if may_write else []
    named = [(s, shares.grantee_name(session(), s.grantee_kind, s.grantee_id)) for s in rows]
    page = render_template(
        "datasets/detail.html",
        ds=ds,
        mount_name=service.mount_name(ds.name, ds.id),
        versions=versions,
        shown=shown,
        files=files,
        may_write=may_write,
        shares=named,
        **forms.page_forms(ds, given),
    )
    return page, status


def _refused(dataset_id: int, name: str, form: FlaskForm, exc: DomainError) -> tuple[str, int]:
    """The page again: the refusal on the form's fields where it names them, else a message."""
    session().rollback()
    if isinstance(exc, ValidationFailed):
        rest = {}
        for key, messages in translate_messages(exc.errors).items():
            field = getattr(form, _FIELDS.get(key, key), None)
            said = messages if isinstance(messages, list) else [str(messages)]
            if field is not None and hasattr(field, "errors"):
                field.errors = [*field.errors, *said]
            else:
                rest[key] = said
        if rest:
            flash(" ".join(m for said in rest.values() for m in said), "error")
    else:
        flash(exc.message, "error")
    return detail_page(dataset_id, exc.status, **{name: form})


# the services' names of what they checked, as the forms name those fields
_FIELDS = {"sha256": "files", "expires_at": "expires", "grantee_id": "grantee"}


def _upload(dataset_id: int) -> Response | tuple[str, int]:
    form = forms.UploadForm()
    if not form.validate_on_submit():
        return detail_page(dataset_id, 400 if form.csrf_token.errors else 422, upload_form=form)
    try:
        # an empty file input still sends a part without a file name
        uploads = [(f.filename, f.stream) for f in request.files.getlist("files") if f.filename]
        fill = sources.upload(uploads, extract=bool(form.extract.data))
        version = service.upload_version(
            session(),
            current_access(),
            Settings.current(),
            dataset_id,
            fill=fill,
            note=form.note.data or "",
            keep_previous=bool(form.keep_previous.data),
        )
    except DomainError as exc:
        return _refused(dataset_id, "upload_form", form, exc)
    flash(_made(version), "info")
    return redirect(url_for(".detail", dataset_id=dataset_id))


def _made(version: Any) -> str:
    return gettext(
        "Version %(version)d made: %(files)s files, %(size)s.",
        version=version.version,
        files=version.file_count,
        size=words.size(version.size_bytes),
    )


@bp.post("/datasets/<id:dataset_id>/import")
@login_required
def import_version(dataset_id: int) -> Response | tuple[str, int]:
    """A new version from a cluster directory, an object store or the dataset's workspace."""
    form = forms.ImportForm()
    if not form.validate_on_submit():
        return detail_page(dataset_id, 400 if form.csrf_token.errors else 422, import_form=form)
    raw = {k: (getattr(form, k).data or "").strip() for k in _IMPORTED[form.source.data or ""]}
    raw = {k: v for k, v in raw.items() if v or k == "source"}
    try:
        errors = NewVersionSchema().validate(raw)
        if errors:
            raise ValidationFailed(errors)
        args = NewVersionSchema().load(raw)
        version = service.add_version(
            session(), current_access(), Settings.current(), dataset_id, args
        )
    except DomainError as exc:
        return _refused(dataset_id, "import_form", form, exc)
    flash(_made(version), "info")
    return redirect(url_for(".detail", dataset_id=dataset_id))


_COMMON = ("source", "note")
_IMPORTED = {
    "path": (*_COMMON, "path"),
    "s3": (*_COMMON, "store", "bucket", "prefix", "access_key", "secret_key"),
    "workspace": _COMMON,
}


def _settings(dataset_id: int) -> Response | tuple[str, int]:
    form = forms.SettingsForm()
    if not form.validate_on_submit():
        return detail_page(dataset_id, 400 if form.csrf_token.errors else 422, settings_form=form)
    data = {"description": form.description.data or "", "visibility": form.visibility.data}
    try:
        errors = DatasetUpdateSchema().validate(data)
        if errors:
            raise ValidationFailed(errors)
        service.update_dataset(session(), current_access(), dataset_id, data)
    except DomainError as exc:
        return _refused(dataset_id, "settings_form", form, exc)
    flash(gettext("Saved."), "info")
    return redirect(url_for(".detail", dataset_id=dataset_id))


def _delete(dataset_id: int) -> Response | tuple[str, int]:
    form = FlaskForm()
    if not form.validate_on_submit():
        return detail_page(dataset_id, 400)
    try:
        ds = service.get_dataset(session(), current_access(), dataset_id)
        name = ds.name
        service.delete_dataset(session(), current_access(), Settings.current(), dataset_id)
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
        return detail_page(dataset_id, exc.status)
    flash(gettext("Dataset %(name)s deleted.", name=name), "info")
    return redirect(url_for(".index"))


@bp.post("/datasets/<id:dataset_id>/shares")
@login_required
def share(dataset_id: int) -> Response | tuple[str, int]:
    form = forms.ShareForm()
    if not form.validate_on_submit():
        return detail_page(dataset_id, 400 if form.csrf_token.errors else 422, share_form=form)
    try:
        kind = form.grantee_kind.data or ""
        grantee = shares.grantee_id(session(), kind, (form.grantee.data or "").strip())
        day = form.expires.data.isoformat() if form.expires.data else ""
        data = {
            "grantee_kind": kind,
            "grantee_id": grantee,
            "expires_at": end_of_day(day, "expires"),
        }
        shares.share(session(), current_access(), dataset_id, data)
    except DomainError as exc:
        return _refused(dataset_id, "share_form", form, exc)
    flash(gettext("Shared with %(name)s.", name=form.grantee.data), "info")
    return redirect(url_for(".detail", dataset_id=dataset_id) + "#shares")


@bp.post("/datasets/<id:dataset_id>/shares/<id:share_id>/delete")
@login_required
def unshare(dataset_id: int, share_id: int) -> Response:
    try:
        shares.unshare(session(), current_access(), dataset_id, share_id)
        flash(gettext("The share was withdrawn."), "info")
    except NotFound:
        raise
    except DomainError as exc:
        session().rollback()
        flash(exc.message, "error")
    return redirect(url_for(".detail", dataset_id=dataset_id) + "#shares")


def _shown_version(versions: list[Any]) -> Any:
    wanted = request.args.get("version", type=int)
    for v in versions:
        if wanted is None or v.version == wanted:
            return v
    if wanted is not None:
        raise NotFound(gettext("Version not found."))
    return None


@bp.route("/datasets/<id:dataset_id>/v/<id:version>/preview/<path:path>")
@login_required
def file_preview(dataset_id: int, version: int, path: str) -> str:
    row = service.get_version(session(), current_access(), dataset_id, version)
    entry = service.manifest_of(Settings.current(), row).find(path)
    if entry is None:
        raise NotFound(words.no_file(path, version))
    url = url_for("datasets.RawFile", dataset_id=dataset_id, version=version, path=path)
    info = preview(Path(row.path), entry, url)
    return render_template("datasets/preview.html", ds=row.dataset, v=row, info=info)
