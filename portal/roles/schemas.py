from __future__ import annotations

from marshmallow import Schema, fields, validate

from portal.authz import GRANTABLE
from portal.schemas import ChangeSchema, name, text

_PERMS = validate.OneOf(sorted(p.value for p in GRANTABLE))


class RoleSchema(Schema):
    id = fields.Integer(dump_only=True)
    name = name(64)
    description = text(255)
    permissions = fields.List(fields.String(validate=_PERMS), required=True)
    builtin = fields.Boolean(dump_only=True)


class RoleUpdateSchema(ChangeSchema):
    name = name(64, required=False)
    description = text(255)
    permissions = fields.List(fields.String(validate=_PERMS))
