from __future__ import annotations

from typing import Any, ClassVar

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from jobspec.names import Name
from portal.datasets.models import Source, Visibility
from portal.i18n import gettext
from portal.schemas import ChangeSchema, ident, name, text
from portal.sharing import GranteeKind
from translations import N_

_VISIBILITY = validate.OneOf([v.value for v in Visibility])
_SHA256 = validate.Regexp(r"^[0-9a-fA-F]{64}$", error=N_("64 hexadecimal digits."))
_BUCKET = validate.Regexp(
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
    error=N_("An S3 bucket name: lower-case letters, digits, '.' and '-'."),
)
_PREFIX = validate.Regexp(r"^[^\x00-\x1f\x7f\\]*$", error=N_("Control characters are not allowed."))


class DatasetSchema(Schema):
    id = fields.Integer(dump_only=True)
    project_id = ident(required=True)
    name = name(64, validate=Name())
    description = text(255)
    visibility = fields.String(validate=_VISIBILITY, load_default=Visibility.PRIVATE.value)
    owner = fields.Function(lambda d: d.owner.username, dump_only=True)
    project = fields.Function(lambda d: d.project.name, dump_only=True)
    created_at = fields.DateTime(dump_only=True)
    updated_at = fields.DateTime(dump_only=True)


class DatasetUpdateSchema(ChangeSchema):
    description = text(255)
    visibility = fields.String(validate=_VISIBILITY)


class DatasetQuerySchema(Schema):
    project_id = ident(query=True)


class VersionSchema(Schema):
    id = fields.Integer(dump_only=True)
    dataset_id = fields.Integer(dump_only=True)
    version = fields.Integer(dump_only=True)
    path = fields.String(dump_only=True)
    checksum = fields.String(dump_only=True)
    file_count = fields.Integer(dump_only=True)
    size_bytes = fields.Integer(dump_only=True)
    source = fields.String(dump_only=True)
    origin = fields.String(dump_only=True)
    note = fields.String(dump_only=True)
    created_at = fields.DateTime(dump_only=True)


class S3Fields(Schema):
    store = name(64)
    bucket = fields.String(required=True, validate=_BUCKET)
    prefix = fields.String(load_default="", validate=[validate.Length(max=512), _PREFIX])
    access_key = text(128)
    secret_key = fields.String(validate=validate.Length(max=256), load_only=True)


class NewVersionSchema(Schema):
    """A version from a cluster ``path``, an ``s3`` prefix or the dataset's ``workspace``."""

    # what each source needs, in the OpenAPI document too (portal.app merges it in)
    OPENAPI_EXTRA: ClassVar[dict[str, Any]] = {
        "oneOf": [
            {
                "properties": {"source": {"enum": [Source.PATH.value]}, "path": {"minLength": 1}},
                "required": ["source", "path"],
            },
            {
                "properties": {
                    "source": {"enum": [Source.S3.value]},
                    "store": {"minLength": 1},
                    "bucket": {"minLength": 1},
                },
                "required": ["source", "store", "bucket"],
            },
            {"properties": {"source": {"enum": [Source.WORKSPACE.value]}}},
        ]
    }

    source = fields.String(
        required=True,
        validate=validate.OneOf([Source.PATH.value, Source.S3.value, Source.WORKSPACE.value]),
    )
    note = text(255)
    path = text(1024)
    store = name(64, required=False)
    bucket = fields.String(validate=_BUCKET)
    prefix = fields.String(load_default="", validate=[validate.Length(max=512), _PREFIX])
    access_key = text(128)
    secret_key = fields.String(validate=validate.Length(max=256), load_only=True)

    @validates_schema
    def _needs(self, data: dict[str, Any], **_: Any) -> None:
        if data["source"] == Source.PATH and not data.get("path"):
            raise ValidationError(gettext("A directory source needs its path."), "path")
        if data["source"] == Source.S3:
            missing = [k for k in ("store", "bucket") if not data.get(k)]
            if missing:
                said = gettext("An object store (S3) source needs it.")
                raise ValidationError({k: [said] for k in missing})


class UploadFormSchema(Schema):
    note = text(255)
    sha256 = fields.String(validate=_SHA256, metadata={"description": "of the one uploaded file"})
    extract = fields.Boolean(load_default=True, metadata={"description": "unpack archives"})
    keep_previous = fields.Boolean(
        load_default=False,
        metadata={
            "description": "on top of the latest version's files (an upload replaces a file "
            "of the same path); else the version holds only the uploaded files"
        },
    )


class FileSchema(Schema):
    path = fields.String()
    size = fields.Integer()
    sha256 = fields.String()


class FilesQuerySchema(Schema):
    under = fields.String(load_default="", validate=[validate.Length(max=1000), _PREFIX])


class PreviewSchema(Schema):
    path = fields.String()
    kind = fields.String(metadata={"description": "image, text or binary"})
    media_type = fields.String()
    size = fields.Integer()
    width = fields.Integer(allow_none=True)
    height = fields.Integer(allow_none=True)
    text = fields.String(allow_none=True)
    truncated = fields.Boolean()
    url = fields.String()


class MountArgsSchema(Schema):
    mode = fields.String(load_default="ro", validate=validate.OneOf(["ro", "rw"]))
    version = fields.Integer(strict=True, validate=validate.Range(min=1, max=2**31 - 1))
    name = fields.String(validate=validate.Regexp(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$"))


class MountSchema(Schema):
    name = fields.String()
    path = fields.String()
    mode = fields.String()
    kind = fields.String()


class ExportSchema(S3Fields):
    pass


class ExportResultSchema(Schema):
    keys = fields.List(fields.String())


class ShareCreateSchema(Schema):
    grantee_kind = fields.String(
        required=True,
        validate=validate.OneOf([k.value for k in GranteeKind]),
        metadata={"description": "user, project (its members) or domain (another tenant)"},
    )
    grantee_id = ident(required=True)
    expires_at = fields.AwareDateTime(
        allow_none=True, metadata={"description": "read access ends at this instant (with a zone)"}
    )


class ShareSchema(Schema):
    id = fields.Integer()
    grantee_kind = fields.String()
    grantee_id = fields.Integer()
    expires_at = fields.DateTime(allow_none=True)
    created_at = fields.DateTime()
