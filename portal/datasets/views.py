"""API: datasets, versions, files, archives, S3 export and job mounts."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from flask import Response, request, send_file, url_for
from flask_login import current_user
from flask_smorest.fields import Upload
from marshmallow import Schema, fields

from portal.datasets import service, shares, sources
from portal.datasets.models import Dataset, DatasetShare, DatasetVersion
from portal.datasets.preview import inline_type, preview
from portal.datasets.schemas import (
    DatasetQuerySchema,
    DatasetSchema,
    DatasetUpdateSchema,
    ExportResultSchema,
    ExportSchema,
    FileSchema,
    FilesQuerySchema,
    MountArgsSchema,
    MountSchema,
    NewVersionSchema,
    PreviewSchema,
    ShareCreateSchema,
    ShareSchema,
    UploadFormSchema,
    VersionSchema,
)
from portal.datasets.service import Settings
from portal.datasets.storage import Entry, iter_files, write_archive
from portal.datasets.words import no_file, size
from portal.errors import NotFound, QuotaExceeded
from portal.i18n import gettext
from portal.pagination import PageParams, page_of_list, page_of_query
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("datasets", __name__, url_prefix="/api/v1/datasets", description="Datasets")


class UploadFilesSchema(Schema):
    files = fields.List(Upload())


@blp.route("")
class Datasets(AuthedView):
    @blp.arguments(DatasetQuerySchema, location="query")
    @blp.response(200, DatasetSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[Dataset]:
        """Datasets the caller can read."""
        stmt = service.datasets_query(current_access(), args.get("project_id"))
        return page_of_query(session(), stmt, pagination_parameters)

    @blp.arguments(DatasetSchema)
    @blp.response(201, DatasetSchema)
    def post(self, args: dict[str, Any]) -> Dataset:
        """Create a dataset in a project (``jobs.submit`` there)."""
        return service.create_dataset(session(), current_access(), args)


@blp.route("/<id:dataset_id>")
class DatasetById(AuthedView):
    @blp.response(200, DatasetSchema)
    def get(self, dataset_id: int) -> Dataset:
        return service.get_dataset(session(), current_access(), dataset_id)

    @blp.arguments(DatasetUpdateSchema)
    @blp.response(200, DatasetSchema)
    def patch(self, args: dict[str, Any], dataset_id: int) -> Dataset:
        return service.update_dataset(session(), current_access(), dataset_id, args)

    @blp.response(204)
    def delete(self, dataset_id: int) -> None:
        """Delete a dataset and all its versions' files."""
        service.delete_dataset(session(), current_access(), Settings.current(), dataset_id)


@blp.route("/<id:dataset_id>/versions")
class Versions(AuthedView):
    @blp.response(200, VersionSchema(many=True))
    @blp.paginate()
    def get(self, dataset_id: int, pagination_parameters: PageParams) -> list[DatasetVersion]:
        service.get_dataset(session(), current_access(), dataset_id)
        return page_of_query(session(), service.versions_query(dataset_id), pagination_parameters)

    @blp.arguments(NewVersionSchema)
    @blp.response(201, VersionSchema)
    def post(self, args: dict[str, Any], dataset_id: int) -> DatasetVersion:
        """A new version from a cluster path, an S3 prefix or the dataset's workspace."""
        return service.add_version(
            session(), current_access(), Settings.current(), dataset_id, args
        )


MULTIPART_SLACK = 1 << 20  # part headers and boundaries around the files


@blp.before_request
def refuse_oversized_uploads() -> None:
    """An upload whose declared size is over the project's quota is refused before its body
    is read (and spooled to disk); the permission checks come first, as everywhere."""
    if request.endpoint != "datasets.UploadVersion" or request.method != "POST":
        return
    length = request.content_length
    if length is None or not current_user.is_authenticated:
        return  # chunked: counted while it streams; no caller: the view answers 401
    dataset_id = (request.view_args or {})["dataset_id"]
    ds = service.get_dataset(session(), current_access(), dataset_id, write=True)
    left = service.limits_for(session(), Settings.current(), ds.project_id).max_bytes
    if length > left + MULTIPART_SLACK:
        raise QuotaExceeded(
            gettext(
                "The upload (%(size)s) is larger than the project's dataset quota left (%(left)s).",
                size=size(length),
                left=size(left),
            )
        )


@blp.route("/<id:dataset_id>/upload")
class UploadVersion(AuthedView):
    @blp.arguments(UploadFormSchema, location="form")
    @blp.arguments(UploadFilesSchema, location="files")
    @blp.response(201, VersionSchema)
    def post(self, form: dict[str, Any], files: dict[str, Any], dataset_id: int) -> DatasetVersion:
        """A new version from uploaded files; zip and tar archives are unpacked."""
        uploads = [(f.filename or "", f.stream) for f in files.get("files", [])]
        fill = sources.upload(uploads, extract=form["extract"], sha256=form.get("sha256"))
        return service.upload_version(
            session(), current_access(), Settings.current(), dataset_id, fill=fill,
            note=form.get("note", ""), keep_previous=form["keep_previous"],
        )  # fmt: skip


@blp.route("/<id:dataset_id>/versions/<id:version>")
class VersionByNumber(AuthedView):
    @blp.response(200, VersionSchema)
    def get(self, dataset_id: int, version: int) -> DatasetVersion:
        return service.get_version(session(), current_access(), dataset_id, version)


def _entry(dataset_id: int, version: int, path: str) -> tuple[DatasetVersion, Entry]:
    row = service.get_version(session(), current_access(), dataset_id, version)
    entry = service.manifest_of(Settings.current(), row).find(path)
    if entry is None:
        raise NotFound(no_file(path, version))
    return row, entry


@blp.route("/<id:dataset_id>/versions/<id:version>/files")
class Files(AuthedView):
    @blp.arguments(FilesQuerySchema, location="query")
    @blp.response(200, FileSchema(many=True))
    @blp.paginate()
    def get(
        self, args: dict[str, Any], dataset_id: int, version: int, pagination_parameters: PageParams
    ) -> list[Entry]:
        row = service.get_version(session(), current_access(), dataset_id, version)
        entries = list(iter_files(service.manifest_of(Settings.current(), row), args["under"]))
        return page_of_list(entries, pagination_parameters)


@blp.route("/<id:dataset_id>/versions/<id:version>/files/<path:path>")
class RawFile(AuthedView):
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="*/*")
    def get(self, dataset_id: int, version: int, path: str) -> Response:
        """A file's bytes: images and text inline, anything else as a download."""
        row, entry = _entry(dataset_id, version, path)
        inline = inline_type(entry.path)
        response = send_file(
            Path(row.path) / entry.path,
            mimetype=inline or "application/octet-stream",
            as_attachment=inline is None,
            download_name=Path(entry.path).name,
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "sandbox; default-src 'none'"
        return response


@blp.route("/<id:dataset_id>/versions/<id:version>/preview/<path:path>")
class Preview(AuthedView):
    @blp.response(200, PreviewSchema)
    def get(self, dataset_id: int, version: int, path: str) -> dict[str, Any]:
        row, entry = _entry(dataset_id, version, path)
        url = url_for("datasets.RawFile", dataset_id=dataset_id, version=version, path=path)
        return preview(Path(row.path), entry, url)


@blp.route("/<id:dataset_id>/versions/<id:version>/archive")
class Archive(AuthedView):
    @blp.response(200, {"type": "string", "format": "binary"}, content_type="application/gzip")
    def get(self, dataset_id: int, version: int) -> Response:
        """The version's files as a gzipped tar, under ``<name>-v<version>/``."""
        row = service.get_version(session(), current_access(), dataset_id, version)
        prefix = f"{row.dataset.name}-v{row.version}"
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed with the response
        manifest = service.manifest_of(Settings.current(), row)
        write_archive(Path(row.path), (e.path for e in manifest.entries), prefix, spool)
        spool.seek(0)
        response = send_file(
            spool, mimetype="application/gzip", as_attachment=True,
            download_name=f"{prefix}.tar.gz",
        )  # fmt: skip
        response.call_on_close(spool.close)
        return response


@blp.route("/<id:dataset_id>/versions/<id:version>/export")
class Export(AuthedView):
    @blp.arguments(ExportSchema)
    @blp.response(200, ExportResultSchema)
    def post(self, args: dict[str, Any], dataset_id: int, version: int) -> dict[str, Any]:
        """Copy the version's files to an S3 bucket under ``prefix``."""
        keys = service.export_s3(
            session(), current_access(), Settings.current(), dataset_id, number=version, args=args
        )
        return {"keys": keys}


@blp.route("/<id:dataset_id>/mounts")
class Mounts(AuthedView):
    @blp.arguments(MountArgsSchema)
    @blp.response(200, MountSchema)
    def post(self, args: dict[str, Any], dataset_id: int) -> dict[str, str]:
        """A job spec ``mounts`` entry: a version ``ro`` (default the latest), or the
        dataset's workspace ``rw`` (to be saved as a version with ``source: workspace``)."""
        return service.mount(session(), current_access(), Settings.current(), dataset_id, args)


@blp.route("/<id:dataset_id>/shares")
class Shares(AuthedView):
    @blp.response(200, ShareSchema(many=True))
    def get(self, dataset_id: int) -> list[DatasetShare]:
        """The dataset's shares (its writers)."""
        return shares.shares(session(), current_access(), dataset_id)

    @blp.arguments(ShareCreateSchema)
    @blp.response(201, ShareSchema)
    def post(self, args: dict[str, Any], dataset_id: int) -> DatasetShare:
        """Let a user, a project's members or a domain read the dataset, until an expiry
        (again for the same grantee: a new expiry)."""
        return shares.share(session(), current_access(), dataset_id, args)


@blp.route("/<id:dataset_id>/shares/<id:share_id>")
class ShareById(AuthedView):
    @blp.response(204)
    def delete(self, dataset_id: int, share_id: int) -> None:
        shares.unshare(session(), current_access(), dataset_id, share_id)
