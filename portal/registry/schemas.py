"""Request and response shapes of the model registry API."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from jobspec.names import Name
from portal.registry.models import ShareMode, VersionStatus, Visibility
from portal.schemas import ident, name, text
from portal.sharing import GranteeKind
from translations import N_

_ALIAS = validate.Regexp(
    r"^[A-Za-z][A-Za-z0-9_-]{0,63}$",
    error=N_("A letter, then letters, digits, _ or - (at most 64 characters)."),
)
_TAGS = fields.Dict(
    keys=fields.String(validate=[validate.Length(min=1, max=64)]),
    values=fields.String(validate=validate.Length(max=256), allow_none=True),
    validate=validate.Length(max=50),
    metadata={"description": "key → value; a null value removes the tag"},
)
CARD = fields.String(
    validate=validate.Length(max=256 * 1024),
    metadata={"description": "Markdown with a YAML header; active content is refused"},
)


class ModelQuerySchema(Schema):
    project_id = ident(query=True)
    task = text(64)
    q = text(64, metadata={"description": "part of the name"})


class ModelCreateSchema(Schema):
    project_id = ident(required=True)
    name = name(64, validate=Name())
    description = text(1000)
    task = text(64)
    framework = text(64)
    visibility = fields.String(validate=validate.OneOf([v.value for v in Visibility]))


class ModelUpdateSchema(Schema):
    description = text(1000)
    task = text(64)
    framework = text(64)
    visibility = fields.String(validate=validate.OneOf([v.value for v in Visibility]))


class ModelSchema(Schema):
    id = fields.Integer()
    project_id = fields.Integer()
    owner = fields.String(allow_none=True)
    name = fields.String()
    description = fields.String()
    task = fields.String()
    framework = fields.String()
    visibility = fields.String()
    preset = fields.String(allow_none=True)
    access = fields.String(metadata={"description": "read, write or admin"})
    versions = fields.Integer()
    aliases = fields.Dict(keys=fields.String(), values=fields.Integer())
    created_at = fields.DateTime()
    updated_at = fields.DateTime()


class ModelFileSchema(Schema):
    path = fields.String()
    size = fields.Integer()
    sha256 = fields.String()


class ModelVersionSchema(Schema):
    id = fields.Integer()
    model_id = fields.Integer()
    number = fields.Integer()
    status = fields.String()
    source = fields.String()
    card = fields.String()
    card_meta = fields.Dict()
    input_schema = fields.Dict()
    output_schema = fields.Dict()
    files = fields.List(fields.Nested(ModelFileSchema))
    size_bytes = fields.Integer()
    parameters = fields.Integer(allow_none=True)
    sha256 = fields.String()
    encrypted = fields.Boolean()
    tags = fields.Dict(keys=fields.String(), values=fields.String())
    metrics = fields.Dict(
        keys=fields.String(),
        metadata={"description": "of the latest evaluation: {name: number, evaluation_id}"},
    )
    metrics_task = fields.String(
        metadata={"description": "the task of that evaluation's report ('': classification)"}
    )
    job_id = fields.Integer(allow_none=True)
    dataset_version_id = fields.Integer(allow_none=True)
    parent_id = fields.Integer(allow_none=True)
    created_by = fields.Integer(allow_none=True, metadata={"description": "user id"})
    created_at = fields.DateTime()
    updated_at = fields.DateTime()


class ModelUploadFormSchema(Schema):
    card = CARD
    dataset_version_id = ident(query=True)
    job_id = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1))


class ModelUploadFileSchema(Schema):
    file = fields.Raw(
        required=True,
        metadata={"type": "string", "format": "binary", "description": "a file, .tar(.gz) or .zip"},
    )


class ModelImportSchema(Schema):
    path = fields.String(required=True, validate=validate.Length(min=1, max=1024))
    tags = _TAGS


class ModelVersionUpdateSchema(Schema):
    status = fields.String(
        validate=validate.OneOf(
            [
                s.value
                for s in VersionStatus
                if s not in (VersionStatus.TRAINING, VersionStatus.FAILED)
            ]
        )
    )
    tags = _TAGS
    card = CARD


class ModelAliasSchema(Schema):
    version = fields.Integer(required=True, strict=True, validate=validate.Range(min=1))


class ModelFineTuneSchema(Schema):
    dataset_version_id = ident()
    tags = _TAGS
    resources = fields.Dict(
        metadata={"description": "overrides of the template's resources (see jobspec)"}
    )


class ModelEvaluateSchema(Schema):
    dataset = text(255, metadata={"description": "default: the preset's labelled test split"})
    dataset_version_id = ident()


class ModelEvaluationSchema(Schema):
    id = fields.Integer()
    version = fields.Integer()
    job_id = fields.Integer(allow_none=True)
    state = fields.String()
    dataset = fields.String()
    dataset_version_id = fields.Integer(allow_none=True)
    task = fields.String(
        metadata={"description": "the report's task, e.g. object-detection ('': classification)"}
    )
    metrics = fields.Dict(
        keys=fields.String(),
        metadata={"description": "{name: number}: accuracy, f1, map, miou, bleu, rougeL, …"},
    )
    per_class = fields.List(
        fields.Dict(),
        metadata={"description": "[{label, <metric>: number, …}]; the columns depend on the task"},
    )
    labels = fields.List(fields.String(), metadata={"description": "classification only"})
    confusion = fields.List(
        fields.List(fields.Integer()), metadata={"description": "classification only"}
    )
    confusion_png = fields.String(allow_none=True)
    plots = fields.Dict(
        keys=fields.String(),
        values=fields.String(),
        metadata={"description": "the job's other plots: {name.png: url}"},
    )
    message = fields.String()
    created_at = fields.DateTime()
    finished_at = fields.DateTime(allow_none=True)


class ModelShareCreateSchema(Schema):
    grantee_kind = fields.String(
        required=True,
        validate=validate.OneOf([k.value for k in GranteeKind]),
        metadata={"description": "user, project, or domain (another tenant)"},
    )
    grantee_id = ident(required=True)
    mode = fields.String(validate=validate.OneOf([m.value for m in ShareMode]))
    expires_at = fields.AwareDateTime(
        allow_none=True, metadata={"description": "access ends at this instant (with a zone)"}
    )


class ModelShareSchema(Schema):
    id = fields.Integer()
    grantee_kind = fields.String()
    grantee_id = fields.Integer()
    mode = fields.String()
    expires_at = fields.DateTime(allow_none=True)
    created_at = fields.DateTime()


class PresetQuerySchema(Schema):
    modality = fields.String(validate=validate.OneOf(["image", "language"]))
    runnable = fields.Boolean()


class PresetSchema(Schema):
    name = fields.String()
    title = fields.String()
    modality = fields.String()
    task = fields.String()
    framework = fields.String()
    runnable = fields.Boolean()
    mirror = fields.String(allow_none=True)
    license = fields.String()
    summary = fields.String()
    input_schema = fields.Dict()
    output_schema = fields.Dict()
    results = fields.Dict(allow_none=True, metadata={"description": "the offline test tool's"})
    source = fields.String(allow_none=True, metadata={"description": "the upstream model page"})
    revision = fields.String(allow_none=True, metadata={"description": "the hub revision"})
    modelscope = fields.String(allow_none=True, metadata={"description": "its ModelScope id"})
    files = fields.List(fields.String(), metadata={"description": "globs of the mirrored files"})
    params = fields.Integer(allow_none=True)
    size_mb = fields.Float(allow_none=True, metadata={"description": "of the mirrored files"})
    published = fields.Dict(
        allow_none=True,
        metadata={"description": "the upstream's evaluation: {dataset, split, metrics, source}"},
    )
    reproduce = fields.String(metadata={"description": "the command that reproduces it"})
    card = fields.String()
    templates = fields.Dict()


class PresetImportSchema(Schema):
    project_id = ident(required=True)
    name = name(64, required=False)
