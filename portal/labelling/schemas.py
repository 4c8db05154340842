from __future__ import annotations

import re

from marshmallow import Schema, fields, validate

from portal.labelling.formats import Format
from portal.labelling.models import ItemStatus, Kind
from portal.schemas import ChangeSchema, ident, name, text
from translations import N_

# letters of any script (猫, 狗), as Chinese label sets need; they name files of the exports
# (VOC's <label>_default.txt), so nothing else: the service checks every label with it too
LABEL = re.compile(r"^[^\W_][\w .-]{0,63}\Z")
LABEL_RULE = N_(
    "A letter or digit, then letters, digits, spaces, '_', '.' or '-' (at most 64 characters)."
)
_LABEL = validate.Regexp(LABEL, error=LABEL_RULE)
_COORD = fields.Float(allow_nan=False, validate=validate.Range(min=0, max=1e6))


class LabelSetSchema(Schema):
    id = fields.Integer(dump_only=True)
    project_id = ident(required=True)
    name = name(64)
    labels = fields.List(
        fields.String(validate=_LABEL), required=True, validate=validate.Length(min=1, max=100)
    )
    created_at = fields.DateTime(dump_only=True)


class LabelSetUpdateSchema(ChangeSchema):
    labels = fields.List(
        fields.String(validate=_LABEL), required=True, validate=validate.Length(min=1, max=100)
    )


class ProjectQuerySchema(Schema):
    project_id = ident(query=True)


class TaskSchema(Schema):
    id = fields.Integer(dump_only=True)
    project_id = ident(required=True)
    name = name(64)
    dataset_version_id = ident(required=True)
    label_set_id = ident(required=True)
    labels = fields.Function(lambda t: t.label_set.labels, dump_only=True)
    created_at = fields.DateTime(dump_only=True)


class ProgressSchema(Schema):
    total = fields.Integer()
    new = fields.Integer()
    annotated = fields.Integer()
    accepted = fields.Integer()
    rejected = fields.Integer()
    done_percent = fields.Float()
    by_annotator = fields.Dict(keys=fields.String(), values=fields.Integer())


class ItemSchema(Schema):
    id = fields.Integer(dump_only=True)
    task_id = fields.Integer(dump_only=True)
    path = fields.String(dump_only=True)
    width = fields.Integer(dump_only=True)
    height = fields.Integer(dump_only=True)
    status = fields.String(dump_only=True)
    review_note = fields.String(dump_only=True)
    updated_at = fields.DateTime(dump_only=True)


class ItemsQuerySchema(Schema):
    status = fields.String(validate=validate.OneOf([s.value for s in ItemStatus]))


class AnnotationSchema(Schema):
    kind = fields.String(required=True, validate=validate.OneOf([k.value for k in Kind]))
    label = fields.String(required=True, validate=_LABEL)
    points = fields.List(
        fields.List(_COORD, validate=validate.Length(equal=2)),
        load_default=list,
        validate=validate.Length(max=1000),
    )
    author = fields.Function(lambda a: a.author_id, dump_only=True)


class AnnotationsSchema(Schema):
    annotations = fields.List(
        fields.Nested(AnnotationSchema), required=True, validate=validate.Length(max=1000)
    )


class ItemDetailSchema(ItemSchema):
    annotations = fields.List(fields.Nested(AnnotationSchema), dump_only=True)
    image_url = fields.String(dump_only=True)


class ReviewSchema(Schema):
    decision = fields.String(required=True, validate=validate.OneOf(["accept", "reject"]))
    note = text(255)


class ExportQuerySchema(Schema):
    format = fields.String(required=True, validate=validate.OneOf([f.value for f in Format]))
    only_accepted = fields.Boolean(load_default=False)


class ExportVersionSchema(ExportQuerySchema):
    dataset_id = ident(required=True)
    note = text(255)
